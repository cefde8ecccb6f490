"""The publish activity's file write: atomic, never a second (temp) copy, into the job's own
folder inside a publish root, never through a symbolic link, mode 0644.

Real files in a temporary directory; nothing is faked.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from activities.publish import _write_atomically, article_marker, write_article
from contracts.errors import PathOutsideRoots, PathRefused, PublishRefused
from contracts.path_safety import PathRoots

ARTICLE = b"<!-- pressroom job=job-1 draft=d@1 sha256:x review=r -->\n\nthe article\n"


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[int]:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield fd
    finally:
        os.close(fd)


def roots(*publish: Path) -> PathRoots:
    return PathRoots(sources=(), publish=publish)


def test_a_stale_temp_from_a_killed_attempt_is_swept(tmp_path: Path, folder: int) -> None:
    # what a worker SIGKILLed between its temp write and its os.replace leaves behind
    stale = tmp_path / ".job-1.md.4242.tmp"
    stale.write_bytes(b"the article, half a publish ago")
    unrelated = tmp_path / ".other-job.md.1.tmp"
    unrelated.write_bytes(b"another job's attempt in flight")
    _write_atomically(folder, "job-1.md", ARTICLE, owner=article_marker("job-1"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".other-job.md.1.tmp", "job-1.md"]
    assert (tmp_path / "job-1.md").read_bytes() == ARTICLE


def test_a_folder_in_the_articles_place_is_refused_and_left_alone(tmp_path: Path,
                                                                  folder: int) -> None:
    target = tmp_path / "job-1.md"
    target.mkdir()
    (target / "keep").write_text("x", encoding="utf-8")
    with pytest.raises(PublishRefused, match="left untouched"):
        _write_atomically(folder, "job-1.md", ARTICLE, owner=article_marker("job-1"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job-1.md"]
    assert (target / "keep").read_text(encoding="utf-8") == "x"


def test_retry_overwrites_in_place_with_one_copy(tmp_path: Path) -> None:
    first = write_article(str(tmp_path / "out"), "job-1", ARTICLE, roots(tmp_path))
    again = write_article(str(tmp_path / "out"), "job-1", ARTICLE, roots(tmp_path))
    assert first == again == tmp_path / "out" / "job-1" / "job-1.md"
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["job-1"]
    assert [p.name for p in first.parent.iterdir()] == ["job-1.md"]


def test_an_article_is_0644_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)  # a worker whose umask would make it 0600
    try:
        path = write_article(str(tmp_path), "job-1", ARTICLE, roots(tmp_path))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_job_id_like_readme_never_touches_readme_md(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# The project's own README\n", encoding="utf-8")
    article = b"<!-- pressroom job=README draft=d@1 sha256:x review=r -->\n\nhi\n"
    path = write_article(str(tmp_path), "README", article, roots(tmp_path))
    assert path == tmp_path / "README" / "README.md"
    assert readme.read_text(encoding="utf-8") == "# The project's own README\n"
    # ... and a README.md in a folder of that name that Pressroom did not write stays too
    other = tmp_path / "elsewhere"
    (other / "README").mkdir(parents=True)
    (other / "README" / "README.md").write_text("someone's notes\n", encoding="utf-8")
    with pytest.raises(PublishRefused, match="not this job's article"):
        write_article(str(other), "README", article, roots(tmp_path))
    assert (other / "README" / "README.md").read_text(encoding="utf-8") == "someone's notes\n"


def test_a_destination_outside_the_publish_roots_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    escape = str(root / ".." / ".." / "etc")
    with pytest.raises(PathOutsideRoots, match="outside the publish roots"):
        write_article(escape, "job-1", ARTICLE, roots(root))
    with pytest.raises(PathOutsideRoots):
        write_article("/etc", "job-1", ARTICLE, roots(root))
    assert not (tmp_path / "etc").exists()


def test_a_symlinked_parent_of_the_destination_is_never_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "out").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathOutsideRoots):
        write_article(str(root / "out" / "articles"), "job-1", ARTICLE, roots(root))
    assert list(outside.iterdir()) == []


def test_a_symlink_swapped_in_after_the_check_fails_the_walk(tmp_path: Path) -> None:
    """The folders are opened from the root with O_NOFOLLOW, so a symbolic link that
    replaces a checked folder (here: put in place before the walk, which the resolve step
    would have followed) is refused, not followed."""
    from contracts.path_safety import Located, open_folder

    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "out").symlink_to(outside, target_is_directory=True)
    located = Located(root.resolve(), root.resolve() / "out" / "job-1")  # as if checked
    with pytest.raises(PathRefused, match="not followed"):
        open_folder(located, what="destination", create=True)
    assert list(outside.iterdir()) == []


def test_a_file_as_destination_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("mine\n", encoding="utf-8")
    with pytest.raises(PathRefused, match="not a folder"):
        write_article(str(tmp_path / "notes.md"), "job-1", ARTICLE, roots(tmp_path))
    assert (tmp_path / "notes.md").read_text(encoding="utf-8") == "mine\n"


def _article(owner: tuple[str, str, str], text: str) -> bytes:
    return article_marker("job-1", owner) + f"draft=d@1 sha256:x review=r -->\n\n{text}\n".encode()


def test_a_reused_job_id_never_replaces_another_runs_article(tmp_path: Path) -> None:
    """The marker binds tenant, project and the first run id: a later workflow with the
    same job id — same tenant or another — is refused with one line and the first
    article stays byte for byte; the same run publishing again still succeeds."""
    first_owner = ("acme", "docs", "run-first")
    first = _article(first_owner, "revenue up 4%")
    path = write_article(str(tmp_path / "out"), "job-1", first, roots(tmp_path), first_owner)
    for owner in (("acme", "docs", "run-second"), ("globex", "docs", "run-first"),
                  ("acme", "other", "run-first")):
        with pytest.raises(PublishRefused, match="another workflow with the same job id"):
            write_article(str(tmp_path / "out"), "job-1", _article(owner, "revenue down 40%"),
                          roots(tmp_path), owner)
        assert path.read_bytes() == first
        assert sorted(p.name for p in path.parent.iterdir()) == ["job-1.md"]
    # a retried publish of the same run (same marker) replaces its own article in place
    assert write_article(str(tmp_path / "out"), "job-1", first, roots(tmp_path),
                         first_owner) == path
    assert path.read_bytes() == first
