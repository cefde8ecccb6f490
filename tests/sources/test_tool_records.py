"""Each research tool call is a recorded call and result the context engine can pair and
verify, and what it records does not depend on where the sources live."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from activities.research_tools import run_source_tool
from context.items import sha256_text
from context.tool_history import ToolHistory, canonical_argument_hash
from context.tools.pairing import pair_tool_history
from contracts.errors import SourceSpecError
from contracts.source_specs import DocumentSourceSpec, GitSourceSpec, WebPageSourceSpec
from examples.build_fixtures import EXPECTED_COMMITS
from tests.sources.conftest import locations, recorded_call, roots


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


def _calls() -> list[tuple[str, dict[str, object]]]:
    return [
        ("search", {"source": "httpkit", "query": "Retry-After"}),
        ("list", {"source": "notes"}),
        ("read", {"source": "blog", "path": "retry-storms.html", "start_line": 1,
                  "end_line": 40}),
        ("search", {"source": "gone", "query": "jitter"}),
    ]


async def test_tool_calls_are_recorded_and_pair_in_any_completion_order(
    fixtures_env: Path,
) -> None:
    specs = _specs()
    recorded = await asyncio.gather(*(
        recorded_call(f"call-{i}", name, arguments, specs)
        for i, (name, arguments) in enumerate(_calls())))
    calls = [call for call, _ in recorded]
    results = [result for _, result in recorded]
    assert [c.tool_name for c in calls] == ["search", "list", "read", "search"]
    for call, result in recorded:
        assert result.call_id == call.call_id
        assert result.result_hash == sha256_text(result.content)
        assert canonical_argument_hash(call.tool_name, call.arguments)
    assert [r.status.value for r in results] == ["success", "success", "success", "error"]
    refused = json.loads(results[-1].content)
    assert refused["error"] == "source_unavailable" and "does not exist" in refused["detail"]
    # Results recorded in reverse completion order still pair with their own calls.
    history = ToolHistory(calls=calls, results=list(reversed(results)))
    paired = pair_tool_history(history, allow_partial_evidence=False)
    assert paired.blocked is None
    assert [p.call_id for p in paired.pairs] == [c.call_id for c in calls]
    assert [p.result_hash for p in paired.pairs] == [r.result_hash for r in results]


async def test_hashes_do_not_depend_on_where_fixtures_live(
    shared_fixtures: Path, fresh_fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = []
    for where in (shared_fixtures, fresh_fixtures):
        monkeypatch.setenv("PRESSROOM_FIXTURES", str(where))
        recorded = [await recorded_call("c", name, arguments, _specs())
                    for name, arguments in _calls()[:3]]
        assert all(str(where) not in result.content for _, result in recorded)
        seen.append([(canonical_argument_hash(call.tool_name, call.arguments),
                      result.result_hash) for call, result in recorded])
    assert seen[0] == seen[1]


async def test_unknown_placeholder_is_a_spec_error() -> None:
    spec = DocumentSourceSpec(name="d", path="${NOT_A_PRESSROOM_VAR}/docs")
    with pytest.raises(SourceSpecError, match="NOT_A_PRESSROOM_VAR"):
        await run_source_tool("list", {"source": "d"}, [spec], locations(), roots=roots())
