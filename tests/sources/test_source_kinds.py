"""The two registries: source kinds (``activities.sources.registry``) and research tools
(``activities.research_tools.registry``).

Each dispatch used to end in an ``else`` that read an unknown kind as a web page or a
document; now the registry is the only dispatch, so these tests hold it to its word: the
registered kinds are exactly the spec models a job may name, an unregistered kind or tool
is a typed error and never another kind's reader, and a tool the note code has never heard
of can produce citable evidence through its own ``citable_lines``. The sources are the
example's real fixtures (``examples/build_fixtures.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from activities.research_tools import (
    TOOL_DEFINITIONS,
    TOOLS,
    NoteArguments,
    ResearchTool,
    ToolContext,
    ToolRejected,
    run_source_tool,
    tool_named,
    verify_note,
)
from activities.research_tools.tool import ArgumentTool
from activities.sources.kind import CitedRange
from activities.sources.registry import SOURCE_KINDS, UnknownSourceKind, source_kind
from contracts.errors import SourceSpecError
from contracts.source_specs import (
    SOURCE_SPEC_MODELS,
    DocumentSourceSpec,
    GitSourceSpec,
    WebPageSourceSpec,
    _Spec,
    spec_kind,
)
from examples.build_fixtures import EXPECTED_COMMITS


class FtpSourceSpec(_Spec):
    """A kind no reader is registered for (a spec model added without its module)."""

    kind: Literal["ftp"] = "ftp"
    path: str


def test_the_registered_kinds_are_exactly_the_spec_models() -> None:
    assert set(SOURCE_KINDS) == {spec_kind(model) for model in SOURCE_SPEC_MODELS}
    for model in SOURCE_SPEC_MODELS:
        assert SOURCE_KINDS[spec_kind(model)].spec_model is model


def test_an_unregistered_kind_is_a_typed_error_not_a_fallback(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("jitter spreads retries\n", encoding="utf-8")
    ftp = FtpSourceSpec(name="mirror", path=str(tmp_path))
    with pytest.raises(UnknownSourceKind) as refused:
        source_kind(ftp)
    assert "'ftp'" in str(refused.value) and "document" in str(refused.value)
    assert isinstance(refused.value, SourceSpecError)  # a bad job spec, never retried
    with pytest.raises(UnknownSourceKind):
        source_kind("ftp")
    # a spec object that claims a registered kind but is another model is refused too
    claimed: Any = "document"  # not a kind FtpSourceSpec allows: model_construct checks nothing
    with pytest.raises(UnknownSourceKind):
        source_kind(FtpSourceSpec.model_construct(name="m", path="x", kind=claimed))


async def test_a_tool_call_over_an_unregistered_kind_reads_nothing(tmp_path: Path) -> None:
    """Before the registry, a kind that was neither git nor document was opened as a saved
    web page; now the call fails with the typed error and nothing is read."""
    (tmp_path / "notes.md").write_text("jitter spreads retries\n", encoding="utf-8")
    ftp = FtpSourceSpec(name="mirror", path=str(tmp_path))
    locations = {"PRESSROOM_HOME": str(tmp_path / "home")}
    with pytest.raises(UnknownSourceKind):
        await run_source_tool("search", {"source": "mirror", "query": "jitter"},
                              [ftp], locations)  # type: ignore[list-item]


def test_each_kind_names_its_evidence(shared_fixtures: Path) -> None:
    commit = EXPECTED_COMMITS["backoff-lib"]["v2"]
    cited = CitedRange(path="a.py", start=3, end=4, revision=commit)
    git = GitSourceSpec(name="lib", repo=str(shared_fixtures / "repos" / "backoff-lib"),
                        commit=commit)
    docs = DocumentSourceSpec(name="notes", path=str(shared_fixtures / "docs"))
    page = WebPageSourceSpec(name="blog", url="https://sre.example.org/p")
    assert source_kind(git).evidence(git, cited)["commit"] == commit
    assert source_kind(docs).evidence(docs, cited)["locator"] == "notes:a.py#L3-L4"
    assert source_kind(page).evidence(page, cited)["authority"] == 0


def test_unknown_tools_are_refused_by_name() -> None:
    for name in ("git_grep", "read_document", "read_web_page", "mcp__", "mcp__x", ""):
        with pytest.raises(ToolRejected) as refused:
            tool_named(name)
        assert refused.value.kind == "unknown_tool"
    assert tool_named("mcp__git__git_log").name == "mcp__git__git_log"
    assert [d.name for d in TOOL_DEFINITIONS] == list(TOOLS)


class _Shouting(ArgumentTool):
    """A tool the note code has never heard of, whose result shows one line."""

    name = "shout"
    arguments = NoteArguments  # any model: its arguments are not what is tested here

    async def run(self, ctx: ToolContext, arguments: Any) -> dict[str, Any]:
        raise AssertionError("not run here")

    def citable_lines(self, arguments: Mapping[str, Any], content: Mapping[str, Any],
                      source: str, revision: str, path: str) -> dict[int, str]:
        if (source, revision, path) == ("echo", content["revision"], "out"):
            return {7: content["line"]}
        return {}


def test_a_new_tool_produces_citable_evidence_through_the_registry() -> None:
    shout: ResearchTool = _Shouting()
    tools = {**TOOLS, "shout": shout}

    def lookup(name: str) -> ResearchTool:
        if name in tools:
            return tools[name]
        return tool_named(name)

    exchange = {"call": {"tool_name": "shout", "arguments": {}},
                "result": {"status": "success",
                           "content": '{"revision": "r1", "line": "jitter"}'}}

    def note(start: int, end: int) -> NoteArguments:
        return NoteArguments.model_validate({"topic": "retries", "claim": "jitter", "citations": [
            {"call_id": "c1", "source": "echo", "revision": "r1", "path": "out",
             "start_line": start, "end_line": end}]})

    accepted = verify_note(note(7, 7), ["retries"], {"c1": exchange}, lookup)
    assert accepted == {"accepted": True, "topic": "retries", "citations": 1}
    with pytest.raises(ToolRejected) as refused:  # line 8 was never shown
        verify_note(note(7, 8), ["retries"], {"c1": exchange}, lookup)
    assert refused.value.kind == "citation_mismatch"
    with pytest.raises(ToolRejected):  # the same exchange under the real registry: unknown
        verify_note(note(7, 7), ["retries"], {"c1": exchange}, tool_named)


async def test_a_declared_git_path_the_commit_lacks_makes_the_source_unavailable(
        shared_fixtures: Path) -> None:
    commit = EXPECTED_COMMITS["backoff-lib"]["v2"]
    git = GitSourceSpec(name="lib", repo=str(shared_fixtures / "repos" / "backoff-lib"),
                        commit=commit, paths=["backoff_lib", "no_such_dir"])
    locations = {"PRESSROOM_HOME": str(shared_fixtures / "home"),
                 "PRESSROOM_FIXTURES": str(shared_fixtures)}
    with pytest.raises(ToolRejected) as refused:
        await run_source_tool("list", {"source": "lib"}, [git], locations)
    assert refused.value.kind == "source_unavailable"
    assert "'no_such_dir' does not exist at commit" in refused.value.detail
