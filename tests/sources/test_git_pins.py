"""Pinned means pinned: a git source reads one commit named by its full id, whatever
happens to tags and branches, and no job can move a ref in the clone cache jobs share.

Through the real git binary over the example repositories (``tests/sources/conftest.py``):
the spec refuses names, short ids and refspecs in ``commit``; the worker refuses a source
without a full commit id before any git process runs; ``cli.pins`` resolves a
``ref`` once (``ls-remote`` for a URL, ``rev-parse`` in a local repository); a commit the
cache lacks is fetched by id into no ref, or — from a server that will not serve it by id
— after mirroring branches and tags into ``refs/pressroom/`` only.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import activities.sources.gitrepo as gitrepo
from activities.research_tools import ToolRejected
from cli.pins import pin_refs, pin_resolution, resolve_ref
from client.errors import UnresolvedRef
from contracts.errors import JobSpecError, UnpinnedSource
from contracts.job_spec import parse_job_spec
from contracts.source_specs import DocumentSourceSpec, GitSourceSpec
from contracts.workflow_messages import ResolveInput
from examples.build_fixtures import EXPECTED_COMMITS
from tests.sources.conftest import locations, tool
from tests.workflows.jobkit import job_dict

V1 = EXPECTED_COMMITS["backoff-lib"]["v1"]
V2 = EXPECTED_COMMITS["backoff-lib"]["v2"]
HOW_TO_FIX = "use the full commit id, or `ref:` and let `pressroom run` resolve it"
ATTACK = "+refs/pull/123/head:refs/tags/v2"
_IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t.invalid",
             "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t.invalid"}


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false",
                          "-c", "tag.gpgsign=false", *args], check=True, capture_output=True,
                         text=True, env={**os.environ, **_IDENTITY})
    return out.stdout.strip()


def new_commit(repo: Path, text: str) -> str:
    """A commit on the checked-out branch adding NOTES.md (mentions jitter: a topic term)."""
    (repo / "NOTES.md").write_text(f"jitter {text}\n", encoding="utf-8")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-qm", text)
    return git(repo, "rev-parse", "HEAD")


def cache_refs(home: Path) -> dict[str, str]:
    """Every ref of the (single) clone under ``home/git-cache``: name -> object id."""
    [cache] = [p for p in (home / "git-cache").iterdir() if not p.name.startswith(".")]
    listing = git(cache, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ") for line in listing.splitlines())


def git_source(repo: str, *, commit: str | None = None, ref: str | None = None,
               paths: list[str] | None = None) -> GitSourceSpec:
    return GitSourceSpec(name="backoff-lib", repo=repo, commit=commit, ref=ref,
                         paths=paths or [])


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PRESSROOM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


# --- the spec: a commit is a full object id, a ref is a safe name ---

@pytest.mark.parametrize("given", [
    ATTACK, "refs/pull/123/head:refs/tags/v2", V2[:7], V2[:39], "main", "v2", "HEAD~1",
    "-v2", V2 + "0",
])
def test_commit_refuses_names_short_ids_and_refspecs_at_parse_time(
        tmp_path: Path, given: str) -> None:
    data = job_dict(tmp_path, tmp_path, sources=[
        {"kind": "git", "name": "r", "repo": "/r", "commit": given}])
    with pytest.raises(JobSpecError) as err:
        parse_job_spec(data, origin="job.yaml")
    message = str(err.value)
    assert "field 'sources.0.git.commit'" in message and HOW_TO_FIX in message
    if ":" in given:
        assert "refspec" in message
    if given in ("main", "v2"):
        assert f"`ref: {given}`" in message  # the exact fix, spelled out


def test_commit_is_lowercased_and_kept_with_its_ref() -> None:
    spec = git_source("/r", commit=V2.upper(), ref="v2")
    assert spec.commit == V2 and spec.ref == "v2"
    sha256 = "ab" * 32
    assert git_source("/r", commit=sha256).commit == sha256


@pytest.mark.parametrize("ref", [
    "-v2", "--upload-pack=touch x", "a..b", "refs/pull/1/head:refs/tags/v2", "v2^{commit}",
    "v2~1", "x@{1}", "@", "a b", "tab\tname", "*", "v[2]", "a\\b", "v2?", "/v2", "v2/",
    "a//b", ".hidden", "v2.lock", "v2.", "",
])
def test_ref_must_be_a_safe_tag_or_branch_name(tmp_path: Path, ref: str) -> None:
    data = job_dict(tmp_path, tmp_path, sources=[
        {"kind": "git", "name": "r", "repo": "/r", "ref": ref}])
    with pytest.raises(JobSpecError, match=r"field 'sources\.0\.git\.ref'"):
        parse_job_spec(data)


def test_a_ref_alone_parses_and_neither_is_refused(tmp_path: Path) -> None:
    for ref in ("v2", "refs/tags/v2", "release/2.x", "HEAD"):
        spec = parse_job_spec(job_dict(tmp_path, tmp_path, sources=[
            {"kind": "git", "name": "r", "repo": "/r", "ref": ref}]))
        [source] = spec.sources
        assert isinstance(source, GitSourceSpec)
        assert source.ref == ref and source.commit is None
    with pytest.raises(JobSpecError, match=r"needs `commit:`.*or `ref:`"):
        parse_job_spec(job_dict(tmp_path, tmp_path, sources=[
            {"kind": "git", "name": "r", "repo": "/r"}]))


# --- the worker: nothing but a full commit id is ever read ---

async def test_an_unpinned_source_is_refused_before_any_git_process(
        shared_fixtures: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[tuple[str, ...]] = []

    async def no_git(repo: str, *args: str, **kwargs: object) -> tuple[int, bytes]:
        ran.append(args)
        raise AssertionError("git ran for an unpinned source")

    monkeypatch.setattr(gitrepo, "run_git", no_git)
    repo = str(shared_fixtures / "repos" / "backoff-lib")
    for name, arguments in (("list", {}), ("search", {"query": "jitter"}),
                            ("read", {"path": "README.md", "start_line": 1, "end_line": 2})):
        with pytest.raises(UnpinnedSource, match="names ref 'v2' but has no commit"):
            await tool(name, git_source(repo, ref="v2"), **arguments)
        # a value built around the spec's validation is refused just the same
        for bad in (ATTACK, "v2", V2[:12]):
            smuggled = GitSourceSpec.model_construct(name="backoff-lib", repo=repo,
                                                     commit=bad, ref=None, paths=[])
            with pytest.raises(UnpinnedSource, match="not a full commit id"):
                await tool(name, smuggled, **arguments)
    assert ran == []


async def test_a_refspec_never_rewrites_a_tag_in_the_shared_clone(
        fresh_fixtures: Path, home: Path) -> None:
    """The attack: ``commit: +refs/pull/123/head:refs/tags/v2`` made the worker's fetch
    move ``v2`` in the clone every tenant's job reads from."""
    origin = fresh_fixtures / "repos" / "backoff-lib"
    evil = new_commit(origin, "EVIL pull request head")
    git(origin, "update-ref", "refs/pull/123/head", evil)
    url = f"file://{origin}"
    first = await tool("search", git_source(url, commit=V2), query="jitter")
    assert first["files"] and {f["revision"] for f in first["files"]} == {V2}
    before = cache_refs(home)
    assert before["refs/tags/v2"] == git(origin, "rev-parse", "refs/tags/v2")

    smuggled = GitSourceSpec.model_construct(name="backoff-lib", repo=url, commit=ATTACK,
                                             ref=None, paths=[])
    # a tool's arguments are JSON (Any), which ``tool`` passes on; none is its own ``root``
    calls: list[tuple[str, dict[str, Any]]] = [("list", {}), ("search", {"query": "EVIL"})]
    for name, arguments in calls:
        with pytest.raises(UnpinnedSource):
            await tool(name, smuggled, **arguments)
    assert cache_refs(home) == before
    again = await tool("search", git_source(url, commit=V2), query="jitter")
    assert again == first
    assert (await tool("search", git_source(url, commit=V2), query="EVIL"))["hit_count"] == 0


# --- the shared clone: fetched by id, refs untouched ---

async def test_jobs_sharing_the_clone_fetch_by_id_and_leave_its_refs_alone(
        fresh_fixtures: Path, home: Path) -> None:
    origin = fresh_fixtures / "repos" / "backoff-lib"
    url = f"file://{origin}"
    job_a = git_source(url, commit=V1)
    read_a = await tool("search", job_a, query="jitter")
    assert read_a["files"] and {f["revision"] for f in read_a["files"]} == {V1}
    before = cache_refs(home)

    # upstream moves on: a new commit, v2 force-moved onto it
    newer = new_commit(origin, "after the clone")
    git(origin, "tag", "-f", "v2", newer)
    job_b = git_source(url, commit=newer, ref="v2", paths=["NOTES.md"])
    read_b = await tool("search", job_b, query="jitter")
    assert [(f["path"], f["revision"]) for f in read_b["files"]] == [("NOTES.md", newer)]
    assert cache_refs(home) == before  # job B's fetch wrote no ref, moved no tag
    # ... and each job still reads exactly its own pin
    assert await tool("search", job_a, query="jitter") == read_a
    old_v2 = await tool("search", git_source(url, commit=V2), query="jitter")
    assert old_v2["files"] and {f["revision"] for f in old_v2["files"]} == {V2}
    assert "NOTES.md" not in (await tool("list", git_source(url, commit=V2)))["entries"]


async def test_a_commit_the_server_will_not_serve_by_id_comes_from_its_branches(
        fresh_fixtures: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    origin = fresh_fixtures / "repos" / "backoff-lib"
    git(origin, "config", "uploadpack.allowReachableSHA1InWant", "false")
    # protocol v0: the server then serves only the objects it advertises
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "protocol.version")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "0")
    url = f"file://{origin}"
    read = await tool("read", git_source(url, commit=V2), path="README.md", start_line=1,
                      end_line=1)
    assert read["revision"] == V2
    before = cache_refs(home)
    inner = new_commit(origin, "not a branch tip")
    tip = new_commit(origin, "the tip")
    spec = git_source(url, commit=inner, paths=["NOTES.md"])
    result = await tool("read", spec, path="NOTES.md", start_line=1, end_line=1)
    assert result["revision"] == inner and result["lines"] == ["jitter not a branch tip"]
    after = cache_refs(home)
    ours = {k: v for k, v in after.items() if k.startswith("refs/pressroom/")}
    assert {k: v for k, v in after.items() if k not in ours} == before
    branch = git(origin, "symbolic-ref", "--short", "HEAD")
    assert ours[f"refs/pressroom/heads/{branch}"] == tip
    # a commit on no branch or tag is not found, and says so
    gone = "f" * 40
    with pytest.raises(ToolRejected) as missing:
        await tool("list", git_source(url, commit=gone))
    assert missing.value.kind == "source_unavailable"
    assert gone in missing.value.detail and "not found" in missing.value.detail


async def test_an_annotated_tag_object_id_is_not_a_commit(fresh_fixtures: Path) -> None:
    repo = fresh_fixtures / "repos" / "backoff-lib"
    git(repo, "tag", "-a", "annotated", "-m", "an annotated tag", V1)
    tag_object = git(repo, "rev-parse", "refs/tags/annotated")
    assert tag_object != V1
    with pytest.raises(ToolRejected) as result:
        await tool("list", git_source(str(repo), commit=tag_object))
    assert result.value.kind == "source_unavailable"
    assert "is not a commit" in result.value.detail and V1 in result.value.detail


# --- submit time: a ref is resolved once, and the job keeps that commit ---

async def test_refs_resolve_locally_and_over_a_url(fresh_fixtures: Path) -> None:
    repo = fresh_fixtures / "repos" / "backoff-lib"
    git(repo, "tag", "-a", "v1-annotated", "-m", "annotated", V1)
    url = f"file://{repo}"
    for location in (str(repo), url):
        assert await resolve_ref(location, "v2", name="b") == V2
        assert await resolve_ref(location, "refs/tags/v1", name="b") == V1
        # an annotated tag resolves to its commit, never to the tag object
        assert await resolve_ref(location, "v1-annotated", name="b") == V1
        with pytest.raises(UnresolvedRef, match="names no tag or branch"):
            await resolve_ref(location, "no-such-tag", name="b")
    # a name that is both a tag and a branch, at different commits, is refused
    git(repo, "branch", "v1", V2)
    for location in (str(repo), url):
        with pytest.raises(UnresolvedRef, match=r"ambiguous.*refs/tags/v1 or refs/heads/v1"):
            await resolve_ref(location, "v1", name="b")
        assert await resolve_ref(location, "refs/heads/v1", name="b") == V2


async def test_an_unreadable_repository_is_unresolved_ref(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    for location, expected in ((f"file://{tmp_path}/nowhere.git", "cannot be read"),
                               (str(tmp_path / "plain"), "not a git repository"),
                               (str(tmp_path / "missing"), "not a git repository")):
        with pytest.raises(UnresolvedRef, match=expected):
            await resolve_ref(location, "v2", name="b")


async def test_pin_refs_fills_the_commit_keeps_the_ref_and_a_moved_tag_changes_nothing(
        fresh_fixtures: Path, tmp_path: Path, home: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRESSROOM_FIXTURES", str(fresh_fixtures))
    origin = fresh_fixtures / "repos" / "backoff-lib"
    spec = parse_job_spec(job_dict(tmp_path, tmp_path, sources=[
        {"kind": "git", "name": "by-url", "repo": f"file://{origin}", "ref": "v2"},
        {"kind": "git", "name": "by-path", "repo": "${PRESSROOM_FIXTURES}/repos/backoff-lib",
         "ref": "refs/tags/v1"},
        {"kind": "git", "name": "pinned", "repo": "/elsewhere", "commit": V1, "ref": "main"},
        {"kind": "document", "name": "notes", "path": str(tmp_path)},
    ]))
    said: list[str] = []
    pinned = await pin_refs(spec, locations(), said.append)
    by_url, by_path, kept, notes = pinned.sources
    assert isinstance(by_url, GitSourceSpec) and isinstance(by_path, GitSourceSpec)
    assert (by_url.commit, by_url.ref) == (V2, "v2")
    assert (by_path.commit, by_path.ref) == (V1, "refs/tags/v1")
    assert by_path.repo == "${PRESSROOM_FIXTURES}/repos/backoff-lib"  # still as written
    assert kept is spec.sources[2] and isinstance(notes, DocumentSourceSpec)
    assert said == [f"pinned by-url: ref v2 → commit {V2}",
                    f"pinned by-path: ref refs/tags/v1 → commit {V1}"]
    assert await pin_refs(pinned, locations(), said.append) is pinned  # nothing left to pin

    # the tag moves after submit: the submitted spec still reads the commit it was given
    moved = new_commit(origin, "MOVED after submit")
    git(origin, "tag", "-f", "v2", moved)
    assert await resolve_ref(f"file://{origin}", "v2", name="x") == moved
    read = await tool("search", by_url, query="jitter")
    assert read["files"] and {f["revision"] for f in read["files"]} == {V2}
    assert (await tool("search", by_url, query="MOVED"))["hit_count"] == 0
    assert "NOTES.md" not in (await tool("list", by_url))["entries"]

    with pytest.raises(UnresolvedRef, match=r"'nope'.*names no tag or branch"):
        await pin_refs(spec.model_copy(update={"sources": [
            git_source(f"file://{origin}", ref="nope")]}), locations(), said.append)
    with pytest.raises(UnresolvedRef, match="unknown placeholder"):
        await pin_refs(spec.model_copy(update={"sources": [
            git_source("${NOT_A_PRESSROOM_VAR}/r", ref="v2")]}), locations(), said.append)


async def test_resolve_add_source_is_pinned_like_run(fresh_fixtures: Path) -> None:
    url = f"file://{fresh_fixtures / 'repos' / 'backoff-lib'}"
    said: list[str] = []
    adding = ResolveInput(action="add_source", source=git_source(url, ref="v1"), note="n")
    pinned = await pin_resolution(adding, locations(), said.append)
    assert isinstance(pinned.source, GitSourceSpec)
    assert (pinned.source.commit, pinned.source.ref) == (V1, "v1") and pinned.note == "n"
    assert said == [f"pinned backoff-lib: ref v1 → commit {V1}"]
    retry = ResolveInput(action="retry")
    assert await pin_resolution(retry, locations(), said.append) is retry
