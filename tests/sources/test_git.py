"""A git source is read at the pinned commit through the object database, never the
worktree: the research tools (``list``, ``search``, ``read``) over real repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from activities.research_tools import ToolRejected
from activities.sources.errors import RetrievalFailed
from activities.sources.evidence import to_context_item
from activities.sources.gitrepo import open_pinned
from context.items import ScopeRef, sha256_text
from context.vocabulary import Role, SourceType, Trust
from contracts.source_specs import GitSourceSpec
from examples.build_fixtures import EXPECTED_COMMITS
from tests.sources.conftest import locations, note_evidence, roots, tool

V1 = EXPECTED_COMMITS["backoff-lib"]["v1"]
V2 = EXPECTED_COMMITS["backoff-lib"]["v2"]
SCOPE = ScopeRef(tenant="acme", project="reliability", task="t1")


def _httpkit(fixtures: Path) -> GitSourceSpec:
    return GitSourceSpec(name="httpkit", repo=str(fixtures / "repos" / "httpkit"),
                         commit=EXPECTED_COMMITS["httpkit"]["v2"])


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True,
                          text=True).stdout


def _show(repo: Path, rev: str, path: str) -> list[str]:
    return _git(repo, "show", f"{rev}:{path}").splitlines()


async def test_pinned_commit_not_working_tree(fresh_fixtures: Path) -> None:
    repo = fresh_fixtures / "repos" / "backoff-lib"
    # The checkout is at v2 and then edited: none of this may reach what is read at v1.
    policy = repo / "backoff_lib" / "policy.py"
    policy.write_text(policy.read_text() + "\n# jitter max_delay LEAKED_WORKTREE\n")
    (repo / "untracked.py").write_text("jitter = 'LEAKED_UNTRACKED'\n")
    spec = GitSourceSpec(name="backoff-lib", repo=str(repo), commit=V1)

    listed = await tool("list", spec)
    assert "untracked.py" not in listed["entries"]
    at_v1 = sorted(_git(repo, "ls-tree", "-r", "--name-only", V1).splitlines())
    found = await tool("search", spec, query="jitter")
    assert found["files"], "v1 mentions jitter in its README"
    assert found["files_searched"] == len(at_v1)
    assert (await tool("search", spec, query="LEAKED"))["hit_count"] == 0
    for hit_file in found["files"]:
        assert hit_file["revision"] == V1 and hit_file["path"] in at_v1
        lines = _show(repo, V1, hit_file["path"])
        for number, text in hit_file["lines"]:
            assert text == lines[number - 1]
    for path in at_v1:
        read = await tool("read", spec, path=path, start_line=1, end_line=200)
        assert read["revision"] == V1
        assert read["lines"] == _show(repo, V1, path)[:200]
        assert not any("LEAKED" in line for line in read["lines"])
    with pytest.raises(ToolRejected, match="no file of this source") as refused:
        await tool("read", spec, path="untracked.py", start_line=1, end_line=1)
    assert refused.value.kind == "not_found"
    # v1 has neither a cap nor Retry-After support
    for term in ("max_delay", "Retry-After", "Idempotency-Key"):
        assert (await tool("search", spec, query=term))["hit_count"] == 0, term


async def test_commit_is_the_full_id_lowercased(shared_fixtures: Path) -> None:
    """Names and short ids are refused by the spec (tests/sources/test_git_pins.py)."""
    repo = shared_fixtures / "repos" / "backoff-lib"
    for given in (V2.upper(), V2):
        spec = GitSourceSpec(name="backoff-lib", repo=str(repo), commit=given)
        assert spec.commit == V2
        found = await tool("search", spec, query="jitter")
        assert found["files"] and {f["revision"] for f in found["files"]} == {V2}
        read = await tool("read", spec, path="README.md", start_line=1, end_line=3)
        assert read["revision"] == V2


async def test_missing_commit_is_unavailable(shared_fixtures: Path) -> None:
    spec = GitSourceSpec(
        name="backoff-lib", repo=str(shared_fixtures / "repos" / "backoff-lib"),
        commit="0123456789abcdef0123456789abcdef01234567",
    )
    for name, arguments in (("list", {}), ("search", {"query": "jitter"}),
                            ("read", {"path": "README.md", "start_line": 1, "end_line": 2})):
        with pytest.raises(ToolRejected) as refused:
            await tool(name, spec, **arguments)
        assert refused.value.kind == "source_unavailable"
        assert "0123456789abcdef" in refused.value.detail and "not found" in refused.value.detail


async def test_unreachable_repositories_are_unavailable(tmp_path: Path) -> None:
    plain_dir = tmp_path / "not-a-repo"
    plain_dir.mkdir()
    cases = {
        str(tmp_path / "missing"): "does not exist",
        str(plain_dir): "not a git repository",
        f"file://{tmp_path}/nowhere.git": "unreachable",
    }
    for location, expected in cases.items():
        spec = GitSourceSpec(name="r", repo=location, commit=V1)
        with pytest.raises(ToolRejected) as refused:
            await tool("list", spec)
        assert refused.value.kind == "source_unavailable", location
        assert expected in refused.value.detail, refused.value.detail


async def test_declared_paths_bound_what_is_seen(shared_fixtures: Path) -> None:
    repo = str(shared_fixtures / "repos" / "backoff-lib")
    # logs/ exists only from v2 on: at v1 the declared path names nothing, a spec mistake
    # every tool reports (never an empty source that looks searched)
    at_v1 = GitSourceSpec(name="backoff-lib", repo=repo, commit=V1, paths=["logs"])
    for name, arguments in (("list", {}), ("search", {"query": "jitter"}),
                            ("read", {"path": "README.md", "start_line": 1, "end_line": 1})):
        with pytest.raises(ToolRejected) as refused:
            await tool(name, at_v1, **arguments)
        assert refused.value.kind == "source_unavailable"
        assert f"path 'logs' does not exist at commit {V1}" in refused.value.detail
    at_v2 = GitSourceSpec(name="backoff-lib", repo=repo, commit=V2, paths=["logs"])
    assert (await tool("list", at_v2))["entries"] == ["logs/"]
    found = await tool("search", at_v2, query="e")
    assert found["files"] and all(f["path"].startswith("logs/") for f in found["files"])


async def test_no_matches_is_an_empty_search(shared_fixtures: Path) -> None:
    found = await tool("search", _httpkit(shared_fixtures), query="certificate pinning")
    assert found["hit_count"] == 0 and found["files"] == [] and found["files_searched"] > 0
    assert found["truncated"] is False and "skipped" not in found


async def test_timeout_is_retrieval_failed(shared_fixtures: Path) -> None:
    with pytest.raises(RetrievalFailed, match="timed out"):
        await open_pinned(_httpkit(shared_fixtures), locations(), 1e-6, roots=roots())


async def test_reads_become_code_evidence_items(shared_fixtures: Path) -> None:
    spec = _httpkit(shared_fixtures)
    first = await tool("search", spec, query="IDEMPOTENT_METHODS")
    again = await tool("search", spec, query="IDEMPOTENT_METHODS")
    assert first == again, "same commit, same query -> identical results"
    hit_file = first["files"][0]
    number, text = hit_file["lines"][0]
    rec = note_evidence([spec], "search", {"source": "httpkit", "query": "IDEMPOTENT_METHODS"},
                        first, hit_file["path"], number, number, revision=hit_file["revision"])
    assert rec.content == text and rec.content_hash == sha256_text(text)
    assert rec.citation() == (f"httpkit@{EXPECTED_COMMITS['httpkit']['v2']}:"
                              f"{hit_file['path']}#L{number}-L{number}")
    assert rec.source_type is SourceType.REPOSITORY_SOURCE and rec.authority == 3
    item = to_context_item(rec, SCOPE)
    assert item.source_ref.is_complete_code_ref
    assert item.trust is Trust.REPOSITORY_EVIDENCE
    assert item.intended_role is Role.UNTRUSTED_DATA
    assert item.revision == EXPECTED_COMMITS["httpkit"]["v2"]
    assert item.source_request_id == "note-1"
    assert item.source_lineage[-1].digest == item.content_hash == sha256_text(item.content)


async def test_url_sources_are_cloned_once_and_fetched_for_new_commits(
    fresh_fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRESSROOM_HOME", str(tmp_path / "home"))
    origin = fresh_fixtures / "repos" / "httpkit"
    url = f"file://{origin}"
    by_url = GitSourceSpec(name="httpkit", repo=url, commit=EXPECTED_COMMITS["httpkit"]["v2"])
    by_path = _httpkit(fresh_fixtures)
    # a tool's arguments are JSON (Any), which ``tool`` passes on; none is its own ``root``
    calls: list[tuple[str, dict[str, Any]]] = [("list", {}), ("search", {"query": "Retry-After"})]
    for name, arguments in calls:
        # results name the source, not its location
        assert await tool(name, by_url, **arguments) == await tool(name, by_path, **arguments)
    caches = list((tmp_path / "home" / "git-cache").iterdir())
    assert len(caches) == 1 and (caches[0] / "HEAD").is_file(), caches

    # A commit made after the clone is fetched on demand, never read from a working tree.
    (origin / "NOTES.md").write_text("Retry-After handling was reviewed.\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "-C", str(origin), "add", "NOTES.md"], check=True, env=env)
    subprocess.run(["git", "-C", str(origin), "commit", "-qm", "notes"], check=True, env=env)
    new = subprocess.run(["git", "-C", str(origin), "rev-parse", "HEAD"], check=True,
                         capture_output=True, text=True, env=env).stdout.strip()
    later = GitSourceSpec(name="httpkit", repo=url, commit=new, paths=["NOTES.md"])
    assert (await tool("list", later))["entries"] == ["NOTES.md"]
    read = await tool("read", later, path="NOTES.md", start_line=1, end_line=1)
    assert read["revision"] == new and read["lines"] == ["Retry-After handling was reviewed."]
    assert list((tmp_path / "home" / "git-cache").iterdir()) == caches


async def test_oversized_blobs_are_skipped_and_reported(shared_fixtures: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import activities.sources.git as git_kind
    import activities.sources.gitrepo as gitrepo

    monkeypatch.setattr(gitrepo, "MAX_BLOB_BYTES", 600)
    monkeypatch.setattr(git_kind, "MAX_BLOB_BYTES", 600)
    spec = _httpkit(shared_fixtures)
    found = await tool("search", spec, query="retry")
    skipped = {s["path"]: s["reason"] for s in found["skipped"]}
    assert "httpkit/client.py" in skipped and "not read" in skipped["httpkit/client.py"]
    assert "httpkit/client.py" not in {f["path"] for f in found["files"]}
    with pytest.raises(ToolRejected, match="files over 600 are not read"):
        await tool("read", spec, path="httpkit/client.py", start_line=1, end_line=5)
