"""The research agent's source tools over the example's real fixture sources.

Real git repositories built by ``examples/build_fixtures.py`` (read at their pinned
commits), the real document folder and saved web page. Every refusal a model's bad call
can earn is exercised: each must be a ``ToolRejected`` of the right kind, never a crash
and never a read outside the declared sources.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from activities.research_tools import (
    MAX_HITS,
    MAX_READ_LINES,
    TOOL_DEFINITIONS,
    ToolRejected,
    run_source_tool,
    search_hits,
)
from activities.research_tools.source_tools import read_limits
from contracts.source_specs import (
    DocumentSourceSpec,
    GitSourceSpec,
    SourceSpec,
    WebPageSourceSpec,
)
from examples.build_fixtures import EXPECTED_COMMITS
from tests.sources.conftest import roots

V2 = EXPECTED_COMMITS["backoff-lib"]["v2"]


def sources(fixtures: Path) -> list[SourceSpec]:
    return [
        GitSourceSpec(name="backoff-lib", repo=str(fixtures / "repos" / "backoff-lib"),
                      commit=V2, paths=["backoff_lib", "tests", "README.md"]),
        DocumentSourceSpec(name="http-notes", path=str(fixtures / "docs")),
        WebPageSourceSpec(name="blog", path=str(fixtures / "web" / "retry-storms.html"),
                          url="https://sre.example.org/blog/retry-storms"),
    ]


async def call(fixtures: Path, tool: str, **arguments: Any) -> dict[str, Any]:
    locations = {"PRESSROOM_HOME": str(fixtures / "home"), "PRESSROOM_FIXTURES": str(fixtures)}
    return await run_source_tool(tool, arguments, sources(fixtures), locations)


async def rejected(fixtures: Path, tool: str, **arguments: Any) -> ToolRejected:
    with pytest.raises(ToolRejected) as caught:
        await call(fixtures, tool, **arguments)
    return caught.value


async def test_list_shows_the_pinned_tree_within_the_declared_paths(
        fresh_fixtures: Path) -> None:
    repo = fresh_fixtures / "repos" / "backoff-lib"
    (repo / "backoff_lib" / "untracked.py").write_text("jitter = 'LEAKED'\n")
    root = await call(fresh_fixtures, "list", source="backoff-lib")
    # logs/ and CHANGELOG.md exist at the commit but are outside the spec's paths
    assert root["entries"] == ["README.md", "backoff_lib/", "tests/"]
    package = await call(fresh_fixtures, "list", source="backoff-lib", path="./backoff_lib/")
    assert package["entries"] == ["__init__.py", "policy.py"]  # never the working tree


async def test_search_finds_lines_with_numbers_and_the_revision(shared_fixtures: Path) -> None:
    found = await call(shared_fixtures, "search", source="backoff-lib", query="MAX_DELAY")
    hits = list(search_hits(found))
    assert hits and not found["truncated"] and found["hit_count"] == len(hits)
    for _path, revision, line, text in hits:
        assert revision == V2 and "max_delay" in text.lower()
        assert isinstance(line, int) and line >= 1
    # grouped by file: each file's path and revision once
    assert len({f["path"] for f in found["files"]}) == len(found["files"])
    pattern = await call(shared_fixtures, "search", source="backoff-lib",
                         query=r"jitter\s*[:=]", regex=True, paths=["backoff_lib"])
    assert {path for path, *_ in search_hits(pattern)} == {"backoff_lib/policy.py"}


async def test_search_is_bounded(shared_fixtures: Path) -> None:
    every_line = await call(shared_fixtures, "search", source="backoff-lib", query=".",
                            regex=True)
    assert len(list(search_hits(every_line))) == MAX_HITS == every_line["hit_count"]
    assert every_line["truncated"]


async def test_read_returns_the_asked_lines_clipped_at_the_end(shared_fixtures: Path) -> None:
    head = await call(shared_fixtures, "read", source="backoff-lib",
                      path="backoff_lib/policy.py", start_line=1, end_line=3)
    assert head["lines"][0].startswith('"""Retry policy') and len(head["lines"]) == 3
    assert head["revision"] == V2
    tail = await call(shared_fixtures, "read", source="backoff-lib",
                      path="backoff_lib/policy.py", start_line=2, end_line=MAX_READ_LINES + 1)
    assert tail["end_line"] == tail["total_lines"] < MAX_READ_LINES


async def test_documents_and_pages_are_readable_the_same_way(shared_fixtures: Path) -> None:
    notes = await call(shared_fixtures, "list", source="http-notes")
    assert notes["entries"] == ["backoff-guidelines.txt", "http-retry-semantics.md"]
    hits = await call(shared_fixtures, "search", source="http-notes", query="Retry-After")
    assert hits["files"] and hits["files"][0]["revision"].startswith("sha256:")
    page = await call(shared_fixtures, "list", source="blog")
    assert page["entries"] == ["retry-storms.html"]
    text = await call(shared_fixtures, "read", source="blog", path="retry-storms.html",
                      start_line=1, end_line=5)
    assert not any("<" in line for line in text["lines"])  # visible text, not markup


@pytest.mark.parametrize(("tool", "arguments", "kind"), [
    ("delete", {"source": "backoff-lib"}, "unknown_tool"),
    ("read", {"source": "backoff-lib", "path": "README.md"}, "malformed_arguments"),
    ("read", {"source": "backoff-lib", "path": "README.md", "start_line": "1",
              "end_line": 2}, "malformed_arguments"),
    ("list", {"source": "backoff-lib", "path": "", "recursive": True}, "malformed_arguments"),
    ("read", {"source": "backoff-lib", "path": "README.md", "start_line": 5, "end_line": 4},
     "malformed_arguments"),
    ("search", {"source": "backoff-lib", "query": "(", "regex": True}, "malformed_arguments"),
    ("search", {"source": "backoff-lib", "query": "x" * 201}, "arguments_over_limit"),
    ("read", {"source": "backoff-lib", "path": "README.md", "start_line": 1,
              "end_line": MAX_READ_LINES + 1}, "arguments_over_limit"),
    ("list", {"source": "httpkit"}, "undeclared_source"),
    ("read", {"source": "backoff-lib", "path": "../httpkit/README.md", "start_line": 1,
              "end_line": 2}, "path_outside_source"),
    ("read", {"source": "http-notes", "path": "/etc/passwd", "start_line": 1,
              "end_line": 2}, "path_outside_source"),
    ("list", {"source": "backoff-lib", "path": "logs"}, "path_outside_source"),
    ("search", {"source": "backoff-lib", "query": "x", "paths": ["logs"]},
     "path_outside_source"),
    ("read", {"source": "backoff-lib", "path": "logs/test-run.log", "start_line": 1,
              "end_line": 2}, "not_found"),
    ("read", {"source": "backoff-lib", "path": "README.md", "start_line": 10_000,
              "end_line": 10_001}, "not_found"),
])
async def test_bad_calls_are_typed_refusals(shared_fixtures: Path, tool: str,
                                            arguments: dict[str, Any], kind: str) -> None:
    refusal = await rejected(shared_fixtures, tool, **arguments)
    assert refusal.kind == kind, refusal.detail
    assert "root:" not in refusal.detail  # a refusal names the problem, never file content


async def test_a_pathological_pattern_is_refused_not_run_forever(fresh_fixtures: Path) -> None:
    (fresh_fixtures / "docs" / "long.txt").write_text("a" * 5000 + "!\n")
    refusal = await rejected(fresh_fixtures, "search", source="http-notes",
                             query="(a+)+$", regex=True, paths=["long.txt"])
    assert refusal.kind == "arguments_over_limit"


async def test_a_link_out_of_a_document_folder_is_never_followed(fresh_fixtures: Path,
                                                                 tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("# Secret\nthe api key is hunter2\n")
    os.symlink(secret, fresh_fixtures / "docs" / "linked.md")
    os.symlink(secret.parent, fresh_fixtures / "docs" / "linked-folder")
    listing = await call(fresh_fixtures, "list", source="http-notes")
    assert "linked.md" not in listing["entries"] and "linked-folder/" not in listing["entries"]
    hits = await call(fresh_fixtures, "search", source="http-notes", query="hunter2")
    assert hits["files"] == [] and hits["hit_count"] == 0
    refusal = await rejected(fresh_fixtures, "read", source="http-notes", path="linked.md",
                             start_line=1, end_line=2)
    assert refusal.kind == "not_found"


async def test_a_missing_source_is_a_refusal_naming_it(shared_fixtures: Path,
                                                       tmp_path: Path) -> None:
    gone = GitSourceSpec(name="gone", repo=str(tmp_path / "nope"), commit=V2)
    with pytest.raises(ToolRejected) as caught:
        await run_source_tool("list", {"source": "gone"}, [gone], {}, roots=roots(tmp_path))
    assert caught.value.kind == "source_unavailable" and "gone" in caught.value.detail


def test_definitions_match_the_validated_arguments() -> None:
    names = {definition.name: definition for definition in TOOL_DEFINITIONS}
    assert sorted(names) == ["finish", "list", "note", "read", "search", "update_plan"]
    read = names["read"].parameters
    assert read["required"] == ["source", "path", "start_line", "end_line"]
    assert read["additionalProperties"] is False
    assert "``" not in names["list"].description


async def test_a_read_is_bounded_by_the_policys_source_limits(
        shared_fixtures: Path, tmp_path: Path) -> None:
    """A policy allowing 4 lines per repository excerpt allows 4 lines per read of a
    repository, and says so; other kinds keep their own bound."""
    from context.policy import POLICY_DIR
    from contracts.job_spec import parse_job_spec

    data = yaml.safe_load((POLICY_DIR / "default.yaml").read_text(encoding="utf-8"))
    data["policy"]["id"] = "short-reads"
    data["source_limits"]["repository_source"]["max_lines"] = 4
    policy = tmp_path / "short-reads.yaml"
    policy.write_text(yaml.safe_dump(data), encoding="utf-8")
    spec = parse_job_spec({
        "job_id": "short-reads-1", "question": "q", "topics": [{"name": "t", "terms": ["x"]}],
        "principal": "agent", "scope": {"tenant": "a", "project": "b", "task": "c"},
        "sources": [{"kind": "document", "name": "d", "path": str(tmp_path)}],
        "destination": str(tmp_path / "out"), "review": {"reviewers": ["alice"]},
        "policy": str(policy)})
    limits = read_limits(spec, roots(tmp_path))
    assert limits["git"] == 4 and limits["web_page"] == 200 and "document" not in limits
    locations = {"PRESSROOM_HOME": str(shared_fixtures / "home"),
                 "PRESSROOM_FIXTURES": str(shared_fixtures)}
    four = await run_source_tool("read", {"source": "backoff-lib", "path": "README.md",
                                          "start_line": 1, "end_line": 4},
                                 sources(shared_fixtures), locations, read_limits=limits)
    assert len(four["lines"]) == 4
    with pytest.raises(ToolRejected) as caught:
        await run_source_tool("read", {"source": "backoff-lib", "path": "README.md",
                                       "start_line": 1, "end_line": 5},
                              sources(shared_fixtures), locations, read_limits=limits)
    assert caught.value.kind == "arguments_over_limit"
    assert "at most 4 per read of a git source" in caught.value.detail


def test_definitions_leave_out_the_bounds_the_server_validates() -> None:
    """The definitions are resent every research turn; a bound the server enforces anyway
    (a string's length, a list's size, a line number's minimum) is not repeated in them,
    and a call over one is still refused, naming the bound."""
    from activities.research_tools import parse_arguments
    from activities.research_tools.arguments import SERVER_VALIDATED

    def keys(node: object) -> set[str]:
        if isinstance(node, dict):
            return set(node) | {k for v in node.values() for k in keys(v)}
        if isinstance(node, list):
            return {k for v in node for k in keys(v)}
        return set()

    for definition in TOOL_DEFINITIONS:
        assert not keys(definition.parameters) & SERVER_VALIDATED, definition.name
    with pytest.raises(ToolRejected) as refused:
        parse_arguments("search", {"source": "s", "query": "x" * 201})
    assert refused.value.kind == "arguments_over_limit"
    assert "200" in str(refused.value)
    with pytest.raises(ToolRejected) as refused:
        parse_arguments("read", {"source": "s", "path": "a", "start_line": 0, "end_line": 3})
    assert refused.value.kind == "malformed_arguments"
