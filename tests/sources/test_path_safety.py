"""Operator-set roots for every path a job names (``contracts.path_safety``), at the level of
the readers: the research tools' views of a source (``list``, ``search``, ``read``), the
submit-time check.

Real files, links, FIFOs and sparse files in a temporary folder; nothing is faked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from activities.research_tools import ToolRejected, run_source_tool
from activities.sources.documents import MAX_FILE_BYTES
from activities.sources.webpages import MAX_PAGE_BYTES
from contracts.errors import PathOutsideRoots, PathRefused
from contracts.job_spec import parse_job_spec
from contracts.path_safety import (
    Located,
    PathRoots,
    check_job_paths,
    list_folder,
    locate,
    read_file,
)
from contracts.source_specs import (
    DocumentSourceSpec,
    GitSourceSpec,
    SourceSpec,
    WebPageSourceSpec,
)
from settings import Settings

SECRET = "the api key is hunter2"


def only(root: Path) -> PathRoots:
    """``root`` as the one source and publish root (nothing of Pressroom's own)."""
    return PathRoots(sources=(root,), publish=(root,))


def locations(tmp_path: Path) -> dict[str, str]:
    return {"PRESSROOM_HOME": str(tmp_path / "home"),
            "PRESSROOM_FIXTURES": str(tmp_path / "fixtures")}


async def call(tmp_path: Path, source: SourceSpec, roots: PathRoots, name: str,
               **arguments: Any) -> dict[str, Any]:
    return await run_source_tool(name, {"source": source.name, **arguments}, [source],
                                 locations(tmp_path), roots=roots)


#: every tool over a source, each asking for what would reveal a secret
CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("list", {}), ("search", {"query": "jitter"}),
    ("read", {"path": "secret.md", "start_line": 1, "end_line": 5}))


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """A root with a document folder, and a secret outside the root."""
    root = tmp_path / "root"
    docs = root / "docs"
    docs.mkdir(parents=True)
    (docs / "retries.md").write_text("# Retries\n\nUse jitter and max_delay.\n",
                                     encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Jitter\n\n{SECRET} (jitter)\n", encoding="utf-8")
    return {"root": root, "docs": docs, "outside": outside}


async def test_proc_self_environ_is_refused_as_a_document(tmp_path: Path) -> None:
    """Before: ``{kind: document, path: /proc/self/environ}`` with the topic term
    ``DATABASE_URL`` put the worker's environment into evidence."""
    spec = DocumentSourceSpec(name="env", path="/proc/self/environ")
    roots = PathRoots(sources=(Path("/"),), publish=(tmp_path,))  # even with / as a root
    for name, arguments in CALLS:
        with pytest.raises(PathRefused, match="/proc"):
            await call(tmp_path, spec, roots, name, **arguments)
    with pytest.raises(PathRefused, match="/proc"):
        locate("/proc/self/environ", roots, "source", what="document")
    for special in ("/sys/kernel/hostname", "/dev/null", "/dev/zero"):
        with pytest.raises(PathRefused):
            locate(special, roots, "source", what="document")


async def test_a_link_into_proc_is_refused_too(tmp_path: Path) -> None:
    (tmp_path / "env.md").symlink_to("/proc/self/environ")
    page = WebPageSourceSpec(name="p", path=str(tmp_path / "env.md"), url="https://x.test/")
    doc = DocumentSourceSpec(name="d", path=str(tmp_path / "env.md"))
    for spec in (page, doc):
        for name, arguments in CALLS:
            with pytest.raises(PathRefused, match="/proc"):
                await call(tmp_path, spec, only(tmp_path), name, **arguments)


async def test_a_path_outside_the_roots_is_refused_for_every_kind(
        layout: dict[str, Path], tmp_path: Path) -> None:
    roots = only(layout["root"])
    secret = str(layout["outside"] / "secret.md")
    for spec in (DocumentSourceSpec(name="d", path=secret),
                 DocumentSourceSpec(name="d", path=str(layout["root"] / ".." / "outside")),
                 WebPageSourceSpec(name="p", path=secret, url="https://x.test/"),
                 GitSourceSpec(name="g", repo=str(layout["outside"]), commit="a" * 40),
                 GitSourceSpec(name="g", repo=f"file://{layout['outside']}", commit="a" * 40)):
        for name, arguments in CALLS:
            with pytest.raises(PathOutsideRoots, match="outside the source roots") as refused:
                await call(tmp_path, spec, roots, name, **arguments)
            assert SECRET not in str(refused.value)


async def test_a_link_out_of_a_document_folder_is_recorded_not_read(
        layout: dict[str, Path], tmp_path: Path) -> None:
    """Before: the link was followed and the secret became evidence."""
    docs = layout["docs"]
    (docs / "linked.md").symlink_to(layout["outside"] / "secret.md")
    (docs / "linked-folder").symlink_to(layout["outside"], target_is_directory=True)
    spec = DocumentSourceSpec(name="d", path=str(docs))
    roots = only(layout["root"])
    listed = await call(tmp_path, spec, roots, "list")
    assert listed["entries"] == ["retries.md"]
    excluded = {e["path"]: e["reason"] for e in listed["excluded"]}
    assert excluded["linked.md"].startswith("symbolic link to a path outside the source roots")
    assert excluded["linked-folder"].startswith("symbolic link")
    found = await call(tmp_path, spec, roots, "search", query="jitter")
    assert [f["path"] for f in found["files"]] == ["retries.md"]
    for path in ("linked.md", "linked-folder/secret.md"):
        with pytest.raises(ToolRejected) as refused:
            await call(tmp_path, spec, roots, "read", path=path, start_line=1, end_line=5)
        assert refused.value.kind == "not_found" and SECRET not in refused.value.detail
    assert SECRET not in str(listed) and SECRET not in str(found)
    assert (await call(tmp_path, spec, roots, "search", query="hunter2"))["hit_count"] == 0


async def test_a_link_inside_the_roots_is_read(layout: dict[str, Path], tmp_path: Path) -> None:
    elsewhere = layout["root"] / "shared" / "jitter.md"
    elsewhere.parent.mkdir()
    elsewhere.write_text("# Jitter\n\nfull jitter\n", encoding="utf-8")
    (layout["docs"] / "jitter.md").symlink_to(elsewhere)
    spec = DocumentSourceSpec(name="d", path=str(layout["docs"]))
    roots = only(layout["root"])
    assert "jitter.md" in (await call(tmp_path, spec, roots, "list"))["entries"]
    read = await call(tmp_path, spec, roots, "read", path="jitter.md", start_line=1, end_line=3)
    assert read["lines"] == ["# Jitter", "", "full jitter"]


async def test_a_fifo_is_never_opened(layout: dict[str, Path], tmp_path: Path) -> None:
    """A FIFO as the document (refused outright) and inside a folder (recorded): neither is
    opened for reading, which would block the worker."""
    fifo = layout["docs"] / "pipe.md"
    os.mkfifo(fifo)
    roots = only(layout["root"])
    for name, arguments in CALLS:
        with pytest.raises(PathRefused, match="FIFO"):
            await call(tmp_path, DocumentSourceSpec(name="d", path=str(fifo)), roots, name,
                       **arguments)
    # a saved page is one file: it is listed under its name, and reading it is refused
    # before it is opened
    page = WebPageSourceSpec(name="p", path=str(fifo), url="https://x.test/")
    with pytest.raises(ToolRejected, match="FIFO"):
        await call(tmp_path, page, roots, "read", path="pipe.md", start_line=1, end_line=5)
    found = await call(tmp_path, page, roots, "search", query="jitter")
    assert found["hit_count"] == 0 and found["files_searched"] == 0
    folder = await call(tmp_path, DocumentSourceSpec(name="d", path=str(layout["docs"])), roots,
                        "list")
    assert {"path": "pipe.md", "reason": "a FIFO, not a regular file; not read"} in \
        folder["excluded"]
    with pytest.raises(PathRefused, match="FIFO"):
        read_file(locate(str(fifo), roots, "source", what="file"), what="file")


async def test_an_oversized_file_is_refused_before_it_is_read(
        layout: dict[str, Path], tmp_path: Path) -> None:
    """Sparse files: only their size says they are too big."""
    big_doc = layout["docs"] / "big.md"
    with big_doc.open("wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)
    big_page = layout["root"] / "big.html"
    with big_page.open("wb") as fh:
        fh.truncate(MAX_PAGE_BYTES + 1)
    roots = only(layout["root"])
    page = WebPageSourceSpec(name="p", path=str(big_page), url="https://x.test/")
    with pytest.raises(ToolRejected, match="over the limit") as refused:
        await call(tmp_path, page, roots, "read", path="big.html", start_line=1, end_line=5)
    assert refused.value.kind == "not_found"
    with pytest.raises(ToolRejected, match="no file of this source"):
        await call(tmp_path, DocumentSourceSpec(name="d", path=str(layout["docs"])), roots,
                   "read", path="big.md", start_line=1, end_line=5)
    # the research tools list it as excluded, with why, instead of offering it
    listed = await run_source_tool("list", {"source": "d"},
                                   [DocumentSourceSpec(name="d", path=str(layout["docs"]))],
                                   locations(tmp_path), roots=roots)
    assert "big.md" not in listed["entries"]
    assert {"path": "big.md", "reason": f"{MAX_FILE_BYTES + 1} bytes, over the limit of "
            f"{MAX_FILE_BYTES}; not read"} in listed["excluded"]


async def test_the_research_tools_record_what_they_leave_out(
        layout: dict[str, Path], tmp_path: Path) -> None:
    (layout["docs"] / "linked.md").symlink_to(layout["outside"] / "secret.md")
    os.mkfifo(layout["docs"] / "pipe.md")
    sources = [DocumentSourceSpec(name="d", path=str(layout["docs"]))]

    async def call(tool: str, **arguments: Any) -> dict[str, Any]:
        return await run_source_tool(tool, {"source": "d", **arguments}, sources,
                                     locations(tmp_path), roots=only(layout["root"]))

    listed = await call("list")
    assert listed["entries"] == ["retries.md"]
    assert {e["path"] for e in listed["excluded"]} == {"linked.md", "pipe.md"}
    hits = await call("search", query="hunter2")
    assert hits["hit_count"] == 0
    with pytest.raises(PathOutsideRoots):
        await run_source_tool("list", {"source": "s"},
                              [DocumentSourceSpec(name="s", path=str(layout["outside"]))],
                              locations(tmp_path), roots=only(layout["root"]))


def test_a_component_swapped_for_a_link_after_the_check_is_not_followed(
        layout: dict[str, Path]) -> None:
    """``locate`` resolved the path; then the folder is replaced by a link out of the root.
    The read walks from the root with O_NOFOLLOW and refuses instead of following it."""
    roots = only(layout["root"])
    checked = locate(str(layout["docs"] / "retries.md"), roots, "source", what="document")
    moved = layout["root"] / "docs-moved"
    layout["docs"].rename(moved)
    layout["docs"].symlink_to(layout["outside"], target_is_directory=True)
    (layout["outside"] / "retries.md").write_text(SECRET, encoding="utf-8")
    with pytest.raises(PathRefused, match=r"not followed|not a folder"):
        read_file(checked, what="document")
    # the final component swapped for a link is refused by O_NOFOLLOW on the file itself
    layout["docs"].unlink()
    moved.rename(layout["docs"])
    target = layout["docs"] / "retries.md"
    target.unlink()
    target.symlink_to(layout["outside"] / "secret.md")
    with pytest.raises(PathRefused):
        read_file(Located(checked.root, checked.real), what="document")


def test_pressroom_s_own_state_is_never_a_job_s_path(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "keys").mkdir(parents=True)
    (home / "keys" / "alice.key").write_text("PRIVATE", encoding="utf-8")
    (home / "pressroom.db").write_bytes(b"SQLite format 3\0")
    (home / "temporal.log").write_text("log", encoding="utf-8")
    (home / "notes").mkdir()
    roots = PathRoots.of(Settings(home=home))
    for private in ("keys/alice.key", "pressroom.db", "temporal.log", "git-cache/x"):
        with pytest.raises(PathRefused, match="Pressroom's own state"):
            locate(str(home / private), roots, "source", what="page")
    assert locate(str(home / "notes"), roots, "source", what="docs").real == home / "notes"
    # a folder still to be made in the home folder is a job's to use (the demo publishes
    # into $PRESSROOM_HOME/published)
    assert locate(str(home / "published"), roots, "publish", what="destination").parts == (
        "published",)
    listing = list_folder(locate(str(home), roots, "source", what="docs"), roots,
                          suffixes=(".key", ".md", ".log"), max_bytes=1000)
    assert listing.files == {}
    assert {rel for rel, _ in listing.excluded} >= {"keys", "temporal.log"}


def test_relative_paths_are_refused(tmp_path: Path) -> None:
    with pytest.raises(PathRefused, match="relative"):
        locate("docs", only(tmp_path), "source", what="document")


def test_the_submit_check_covers_every_path_a_spec_names(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "docs").mkdir(parents=True)
    (root / "policy.yaml").write_text("x", encoding="utf-8")
    base: dict[str, Any] = {
        "job_id": "j", "question": "q", "topics": [{"name": "t", "terms": ["x"]}],
        "principal": "agent", "scope": {"tenant": "a", "project": "b", "task": "c"},
        "sources": [{"kind": "document", "name": "d", "path": str(root / "docs")}],
        "destination": str(root / "out"), "workspace": str(root / "ws"),
        "policy": str(root / "policy.yaml"),
        "review": {"reviewers": ["alice"]}}
    roots = only(root)
    check_job_paths(parse_job_spec(base), roots, locations(tmp_path))  # all inside
    outside = str(tmp_path / "elsewhere")
    for change, what in (
            ({"destination": str(root / ".." / ".." / "etc")}, "destination"),
            ({"workspace": outside}, "workspace"),
            ({"policy": "/etc/passwd"}, "policy"),
            ({"sources": [{"kind": "web_page", "name": "p", "path": outside,
                           "url": "https://x.test/"}]}, "source 'p' page"),
            ({"sources": [{"kind": "git", "name": "g", "repo": outside,
                           "commit": "a" * 40}]}, "source 'g' repository"),
            ({"sources": [{"kind": "document", "name": "e",
                           "path": "/proc/self/environ"}]}, "source 'e' path")):
        spec = parse_job_spec({**base, **change})
        with pytest.raises(PathRefused, match=what):
            check_job_paths(spec, roots, locations(tmp_path))
    # a file where a folder belongs (and the reverse) is refused too
    with pytest.raises(PathRefused, match="not a folder"):
        check_job_paths(parse_job_spec({**base, "destination": str(root / "policy.yaml")}),
                        roots, locations(tmp_path))
    # a URL repository is not a path; a missing path passes (it is a recorded failure later)
    check_job_paths(parse_job_spec({**base, "sources": [
        {"kind": "git", "name": "g", "repo": "https://example.org/r.git", "commit": "a" * 40},
        {"kind": "document", "name": "m", "path": str(root / "missing")}]}),
        roots, locations(tmp_path))


def test_a_folder_nested_past_the_depth_limit_is_an_exclusion_not_a_crash(
        tmp_path: Path) -> None:
    """A document folder nested past MAX_FOLDER_DEPTH lists what lies within it and records
    the rest as one exclusion; the listing recursed without a bound (a tree past Python's
    recursion limit raised RecursionError). 80 levels: deep enough to cross the bound,
    shallow enough for pytest's own clean-up of its temporary folders (shutil.rmtree
    recurses too)."""
    from contracts.path_safety import MAX_FOLDER_DEPTH

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "top.md").write_text("top\n")
    fd = os.open(docs, os.O_RDONLY)
    try:  # one level at a time through dir fds: the whole path is too long for one call
        for _ in range(80):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("deep\n")
    finally:
        os.close(fd)
    listing = list_folder(locate(str(docs), only(tmp_path), "source", what="docs"),
                          only(tmp_path), suffixes=(".md",), max_bytes=1000)
    assert list(listing.files) == ["top.md"]
    [(where, why)] = listing.excluded
    assert where.count("/") == MAX_FOLDER_DEPTH and "nested deeper than" in why
