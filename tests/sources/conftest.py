"""Fixture sources for the source tests: the example repositories, built for real, and the
research tools (``run_source_tool``) over them as a worker runs them."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from activities.record_turn import _note_records
from activities.research_tools import ToolRejected, run_source_tool
from activities.sources.evidence import EvidenceRecord
from context.admission.security import redact_secrets
from context.items import sha256_text
from context.tool_history import ToolCall, ToolResult
from context.vocabulary import ToolStatus
from contracts.job_spec import parse_job_spec
from contracts.path_safety import PathRoots
from contracts.source_specs import SourceSpec
from examples.build_fixtures import build_fixtures
from settings import Settings
from tests.workflows.jobkit import job_dict

AS_OF = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

def locations() -> dict[str, str]:
    """What source-location placeholders stand for, as a worker started now would be told
    (``Settings.locations``): the tests point ``PRESSROOM_FIXTURES`` / ``PRESSROOM_HOME``
    at their own trees with ``monkeypatch`` first."""
    return Settings.from_env(os.environ).locations


def roots(*folders: Path) -> PathRoots:
    """The roots a worker started now would have (Pressroom's own folders, as
    ``locations``), plus ``folders`` for reading and publishing — by default the system's
    temporary folder, which holds every test's ``tmp_path`` and fixture tree."""
    extra = folders or (Path(tempfile.gettempdir()),)
    return PathRoots.of(Settings.from_env(os.environ), sources=extra, publish=extra)


@pytest.fixture(scope="session")
def shared_fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Read-only fixture tree shared by tests that do not modify it."""
    target = tmp_path_factory.mktemp("fixtures")
    build_fixtures(target)
    return target


@pytest.fixture()
def fresh_fixtures(tmp_path: Path) -> Path:
    """A private fixture tree a test may modify."""
    build_fixtures(tmp_path / "fixtures")
    return tmp_path / "fixtures"


@pytest.fixture()
def fixtures_env(shared_fixtures: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``${PRESSROOM_FIXTURES}`` points at the shared tree."""
    monkeypatch.setenv("PRESSROOM_FIXTURES", str(shared_fixtures))
    return shared_fixtures


async def tool(name: str, source: SourceSpec, root: PathRoots | None = None,
               **arguments: Any) -> dict[str, Any]:
    """One call of a research tool (``list``, ``search``, ``read``) over ``source``, the
    job's one declared source, as a worker started now would run it."""
    return await run_source_tool(name, {"source": source.name, **arguments}, [source],
                                 locations(), roots=root or roots())


def note_evidence(sources: Sequence[SourceSpec], tool_name: str, arguments: dict[str, Any],
                  result: dict[str, Any], path: str, start: int, end: int, *,
                  revision: str | None = None, topic: str = "retries",
                  call_id: str = "call-1", note_call_id: str = "note-1") -> EvidenceRecord:
    """The evidence record ``record_turn`` makes of a note citing lines ``start``-``end``
    of ``path`` as the stored ``result`` of one ``tool_name`` call showed them
    (``activities.record_turn._note_records``): the kind's own source type, locator,
    trust and authority, the cited text exactly as the result showed it."""
    spec = parse_job_spec(job_dict(Path(tempfile.gettempdir()), Path(tempfile.gettempdir()),
                                   sources=[s.model_dump(mode="json") for s in sources]))
    exchange = {"call": {"call_id": call_id, "tool_name": tool_name, "arguments": arguments},
                "result": {"call_id": call_id, "tool_name": tool_name, "status": "success",
                           "content": json.dumps(result, sort_keys=True, ensure_ascii=False)}}
    citation = {"call_id": call_id, "source": arguments["source"], "path": path,
                "start_line": start, "end_line": end,
                "revision": revision or result.get("revision", "")}
    [record] = _note_records(spec, note_call_id, {"topic": topic, "citations": [citation]},
                             {call_id: exchange}, AS_OF)
    return record


async def recorded_call(call_id: str, name: str, arguments: dict[str, Any],
                        sources: Sequence[SourceSpec], *, turn: int = 0,
                        root: PathRoots | None = None) -> tuple[ToolCall, ToolResult]:
    """One research tool call run and recorded as ``activities.tool_call`` records it: the
    result's JSON (or, for a refused call, the error kind and its redacted detail), the
    status, and the hash of exactly that content."""
    try:
        result = await run_source_tool(name, arguments, sources, locations(),
                                       roots=root or roots())
        status = ToolStatus.SUCCESS
        content = json.dumps(result, sort_keys=True, ensure_ascii=False)
    except ToolRejected as refused:
        status = ToolStatus.ERROR
        content = json.dumps({"error": refused.kind, "detail": redact_secrets(refused.detail)},
                             sort_keys=True, ensure_ascii=False)
    return (ToolCall(call_id=call_id, tool_name=name, arguments=arguments, turn=turn),
            ToolResult(call_id=call_id, tool_name=name, status=status, content=content,
                       result_hash=sha256_text(content)))
