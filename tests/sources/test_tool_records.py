"""Each acquisition is a recorded tool call the context engine can pair and verify."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from activities.sources import acquire
from context.items import sha256_text
from context.tool_history import ToolHistory, canonical_argument_hash
from context.tools.pairing import pair_tool_history
from context.vocabulary import AcquisitionOutcome
from contracts.errors import SourceSpecError
from contracts.source_specs import DocumentSourceSpec, GitSourceSpec, WebPageSourceSpec
from examples.build_fixtures import EXPECTED_COMMITS
from tests.sources.conftest import AS_OF, TOPICS, locations, roots


def _specs() -> list[GitSourceSpec | DocumentSourceSpec | WebPageSourceSpec]:
    return [
        GitSourceSpec(
            name="httpkit", repo="${PRESSROOM_FIXTURES}/repos/httpkit",
            commit=EXPECTED_COMMITS["httpkit"]["v2"],
        ),
        DocumentSourceSpec(name="notes", path="${PRESSROOM_FIXTURES}/docs"),
        WebPageSourceSpec(
            name="blog", path="${PRESSROOM_FIXTURES}/web/retry-storms.html",
            url="https://sre.example.org/blog/retry-storms",
        ),
        GitSourceSpec(name="gone", repo="${PRESSROOM_FIXTURES}/repos/gone", commit="0" * 40),
    ]


async def test_tool_calls_are_recorded_and_pair_in_any_completion_order(
    fixtures_env: Path,
) -> None:
    specs = _specs()
    results = await asyncio.gather(
        *(acquire(s, TOPICS, call_id=f"acq-{i}", as_of=AS_OF, locations=locations(),
                  roots=roots()) for i,
          s in enumerate(specs))
    )
    assert [r.tool_call.tool_name for r in results] == [
        "git_grep", "read_document", "read_web_page", "git_grep"
    ]
    for r in results:
        assert r.tool_result.call_id == r.tool_call.call_id
        assert r.tool_result.result_hash == sha256_text(r.tool_result.content)
        assert r.argument_hash == canonical_argument_hash(
            r.tool_call.tool_name, r.tool_call.arguments
        )
        acq = r.source_acquisition()
        assert acq.source_request_id == r.tool_call.call_id
        assert acq.result_digest == r.tool_result.result_hash
    assert [r.tool_result.status.value for r in results] == [
        "success", "success", "success", "error"
    ]
    assert results[-1].outcome is AcquisitionOutcome.RETRIEVAL_FAILED
    # Results recorded in reverse completion order still pair with their own calls.
    history = ToolHistory(
        calls=[r.tool_call for r in results],
        results=[r.tool_result for r in reversed(results)],
    )
    paired = pair_tool_history(history, allow_partial_evidence=False)
    assert paired.blocked is None
    assert [p.call_id for p in paired.pairs] == [r.tool_call.call_id for r in results]
    assert [p.result_hash for p in paired.pairs] == [r.tool_result.result_hash for r in results]


async def test_hashes_do_not_depend_on_where_fixtures_live(
    shared_fixtures: Path, fresh_fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = []
    for where in (shared_fixtures, fresh_fixtures):
        monkeypatch.setenv("PRESSROOM_FIXTURES", str(where))
        results = [await acquire(s, TOPICS, call_id="c", as_of=AS_OF,
                                 locations=locations(), roots=roots()) for s in _specs()[:3]]
        seen.append([(r.argument_hash, r.tool_result.result_hash) for r in results])
    assert seen[0] == seen[1]


async def test_unknown_placeholder_is_a_spec_error() -> None:
    spec = DocumentSourceSpec(name="d", path="${NOT_A_PRESSROOM_VAR}/docs")
    with pytest.raises(SourceSpecError, match="NOT_A_PRESSROOM_VAR"):
        await acquire(spec, TOPICS, call_id="c", as_of=AS_OF, locations=locations(), roots=roots())
