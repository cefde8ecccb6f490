"""A real serialized request for the provider tests.

The request is built from the example fixtures the way a job builds it: the sources are
acquired for real (``activities.sources``), the job spec is rendered as task text by the
runtime's own ``render_job_spec``, and the engine's renderer and provider adapters
(``context.seal.render``, ``context.seal.adapters``) produce the payload. Nothing here is mocked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from activities.candidates import render_job_spec
from activities.sources import AcquisitionResult, acquire, to_context_item
from context.items import ContextItem, ScopeRef
from context.seal.adapters import get_adapter
from context.seal.render import AssemblyInput, assemble_messages
from context.tool_history import ToolHistory
from context.tools.pairing import pair_tool_history
from context.vocabulary import Role, SourceType, Trust
from contracts.job_spec import TopicSpec, load_job_spec
from contracts.source_specs import DocumentSourceSpec, GitSourceSpec
from examples.build_fixtures import build_fixtures
from settings import Settings

ROOT = Path(__file__).resolve().parents[2]
AS_OF = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
SCOPE = ScopeRef(tenant="acme", project="reliability", task="retry-article")
MISSING = ["tls_pinning"]


@dataclass
class BuiltRequest:
    assembly: AssemblyInput
    data_items: list[ContextItem]
    results: list[AcquisitionResult]
    topics: list[tuple[str, list[str]]]

    def payload(self, adapter: str) -> dict[str, Any]:
        return get_adapter(adapter).serialize(self.assembly, "extractive-v1", 4096).payload


def _item(item_id: str, content: str, trust: Trust, role: Role, st: SourceType) -> ContextItem:
    return ContextItem.build(
        item_id=item_id, source_type=st, producer="test", content=content, scope=SCOPE,
        trust=trust, intended_role=role, revision="1",
    )


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltRequest:
    import asyncio
    import os

    fixtures = tmp_path_factory.mktemp("fixtures")
    build_fixtures(fixtures)
    old = os.environ.get("PRESSROOM_FIXTURES")
    os.environ["PRESSROOM_FIXTURES"] = str(fixtures)
    try:
        spec = load_job_spec(ROOT / "examples" / "job.yaml")
        topics = [TopicSpec(name=t.name, terms=t.terms) for t in spec.topics]
        sources = [
            *spec.sources,
            GitSourceSpec(name="gone", repo=str(fixtures / "repos" / "gone"),
                          commit="0" * 40),
            DocumentSourceSpec(
                name="plan", path=str(fixtures / "workspace" / "plan.md"),
                trust=Trust.PROJECT_EDITABLE,
            ),
        ]

        async def run() -> list[AcquisitionResult]:
            return list(await asyncio.gather(*(
                acquire(s, topics, call_id=f"acq-{i}", as_of=AS_OF,
                        locations=Settings.from_env(os.environ).locations)
                for i, s in enumerate(sources)
            )))

        results = asyncio.run(run())
    finally:
        if old is None:
            os.environ.pop("PRESSROOM_FIXTURES", None)
        else:
            os.environ["PRESSROOM_FIXTURES"] = old
    data = [to_context_item(r, SCOPE) for res in results for r in res.records]
    pairs = pair_tool_history(
        ToolHistory(
            calls=[r.tool_call for r in results],
            results=[r.tool_result for r in reversed(results)],
        ),
        allow_partial_evidence=False,
    ).pairs
    control = _item("control", "Write only from evidence.", Trust.CONTROL_AUTHORITY,
                    Role.CONTROL, SourceType.SYSTEM_POLICY)
    task_text = render_job_spec(spec) + "\n- tls_pinning (search terms: certificate pinning)"
    task = _item("job_spec:retry-article-001", task_text, Trust.TASK_AUTHORITY,
                 Role.TASK_INTENT, SourceType.USER_REQUEST)
    draft = _item("article_draft:retry-article-001",
                  "# Old draft\n- \"jitter is optional and max_delay is 5 s\"",
                  Trust.UNTRUSTED_EXTERNAL_DATA, Role.UNTRUSTED_DATA, SourceType.AGENT_OUTPUT)
    assembly = assemble_messages(
        control=[control], task=[task], data=[draft, *data], tool_pairs=pairs,
        missing_topics=MISSING,
    )
    names = [(t.name, list(t.terms)) for t in topics] + [("tls_pinning", ["certificate pinning"])]
    return BuiltRequest(assembly=assembly, data_items=data, results=results, topics=names)
