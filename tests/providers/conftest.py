"""A real serialized request for the provider tests.

The request is built from the example fixtures the way a job in agent mode builds it: the
research tools (``search``, ``read``) run for real over the job's declared sources
(``run_source_tool``), recorded as the tool-call activity records them; for each topic, the
lines around the first hits in each source are read and cited by a note, which becomes
evidence exactly as ``record_turn`` makes it (``_note_records``) and a candidate as the
candidates loader makes it (``to_context_item``). The job spec is rendered as task text by
the runtime's own ``render_job_spec``, and the engine's renderer and provider adapters
(``context.seal.render``, ``context.seal.adapters``) produce the payload. Nothing here is
mocked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from activities.candidates import render_job_spec
from activities.record_turn import _note_records
from activities.research_tools.registry import run_source_tool
from activities.research_tools.source_tools import read_limits
from activities.sources.evidence import to_context_item
from activities.tool_errors import ToolRejected
from context.admission.security import redact_secrets
from context.items import ContextItem, ScopeRef, sha256_text
from context.seal.adapters import get_adapter
from context.seal.render import AssemblyInput, assemble_messages
from context.tool_history import ToolCall, ToolHistory, ToolResult
from context.tools.pairing import pair_tool_history
from context.vocabulary import Role, SourceType, ToolStatus, Trust
from contracts.job_spec import JobSpec, load_job_spec
from contracts.path_safety import PathRoots
from contracts.source_specs import DocumentSourceSpec, GitSourceSpec
from examples.build_fixtures import build_fixtures
from settings import Settings

ROOT = Path(__file__).resolve().parents[2]
AS_OF = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
SCOPE = ScopeRef(tenant="acme", project="reliability", task="retry-article")
MISSING = ["tls_pinning"]
#: lines read before and after a source's first hit for a topic
CONTEXT_LINES = 6


@dataclass
class BuiltRequest:
    assembly: AssemblyInput
    data_items: list[ContextItem]
    calls: list[ToolCall]
    results: list[ToolResult]
    topics: list[tuple[str, list[str]]]

    def payload(self, adapter: str) -> dict[str, Any]:
        return get_adapter(adapter).serialize(self.assembly, "extractive-v1", 4096).payload


def _item(item_id: str, content: str, trust: Trust, role: Role, st: SourceType) -> ContextItem:
    return ContextItem.build(
        item_id=item_id, source_type=st, producer="test", content=content, scope=SCOPE,
        trust=trust, intended_role=role, revision="1",
    )


class _Research:
    """The research tools over ``spec``'s sources, every call recorded as
    ``activities.tool_call`` records it, every note turned into evidence as
    ``activities.record_turn`` does."""

    def __init__(self, spec: JobSpec, locations: dict[str, str], roots: PathRoots) -> None:
        self.spec, self.locations, self.roots = spec, locations, roots
        self.limits = read_limits(spec, roots)
        self.calls: list[ToolCall] = []
        self.results: list[ToolResult] = []
        self.exchanges: dict[str, dict[str, Any]] = {}
        self.records: list[Any] = []

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        call_id = f"call-{len(self.calls) + 1:03d}"
        try:
            result: dict[str, Any] | None = await run_source_tool(
                name, arguments, self.spec.sources, self.locations,
                read_limits=self.limits, roots=self.roots)
            status = ToolStatus.SUCCESS
            content = json.dumps(result, sort_keys=True, ensure_ascii=False)
        except ToolRejected as refused:
            result, status = None, ToolStatus.ERROR
            content = json.dumps({"error": refused.kind,
                                  "detail": redact_secrets(refused.detail)},
                                 sort_keys=True, ensure_ascii=False)
        self.calls.append(ToolCall(call_id=call_id, tool_name=name, arguments=arguments,
                                   turn=len(self.calls)))
        self.results.append(ToolResult(call_id=call_id, tool_name=name, status=status,
                                       content=content, result_hash=sha256_text(content)))
        self.exchanges[call_id] = {
            "call": {"call_id": call_id, "tool_name": name, "arguments": arguments},
            "result": {"call_id": call_id, "tool_name": name, "status": status.value,
                       "content": content}}
        return result

    def note(self, topic: str, read: dict[str, Any]) -> None:
        """A note citing the whole of a ``read`` result (the last call made)."""
        call_id = self.calls[-1].call_id
        citation = {"call_id": call_id, "source": read["source"], "path": read["path"],
                    "revision": read["revision"], "start_line": read["start_line"],
                    "end_line": read["end_line"]}
        note_id = f"note-{len(self.records) + 1:03d}"
        self.records += _note_records(self.spec, note_id,
                                      {"topic": topic, "citations": [citation]},
                                      self.exchanges, AS_OF)

    async def topic(self, name: str, terms: list[str]) -> None:
        for source in self.spec.sources:
            for term in terms:
                found = await self.call("search", {"source": source.name, "query": term})
                if not found or not found["files"]:
                    continue
                first = found["files"][0]
                hit = first["lines"][0][0]
                limit = min(self.limits.get(source.kind, 2 * CONTEXT_LINES + 1),
                            2 * CONTEXT_LINES + 1)
                start = max(1, hit - CONTEXT_LINES)
                read = await self.call("read", {"source": source.name, "path": first["path"],
                                                "start_line": start,
                                                "end_line": start + limit - 1})
                if read is not None:
                    self.note(name, read)
                break  # one term's hits per source and topic


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
        spec = spec.model_copy(update={"sources": [
            *spec.sources,
            GitSourceSpec(name="gone", repo=str(fixtures / "repos" / "gone"),
                          commit="0" * 40),
            DocumentSourceSpec(
                name="plan", path=str(fixtures / "workspace" / "plan.md"),
                trust=Trust.PROJECT_EDITABLE,
            ),
        ]})
        settings = Settings.from_env(os.environ)
        research = _Research(spec, settings.locations,
                             PathRoots.of(settings, sources=(fixtures,)))

        async def run() -> None:
            for topic in spec.topics:
                await research.topic(topic.name, list(topic.terms))

        asyncio.run(run())
    finally:
        if old is None:
            os.environ.pop("PRESSROOM_FIXTURES", None)
        else:
            os.environ["PRESSROOM_FIXTURES"] = old
    data = [to_context_item(r, SCOPE) for r in research.records]
    pairs = pair_tool_history(
        ToolHistory(calls=research.calls, results=list(reversed(research.results))),
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
    topics = [(t.name, list(t.terms)) for t in spec.topics]
    names = [*topics, ("tls_pinning", ["certificate pinning"])]
    return BuiltRequest(assembly=assembly, data_items=data, calls=research.calls,
                        results=research.results, topics=names)
