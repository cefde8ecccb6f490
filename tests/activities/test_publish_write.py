"""The publish activity's file write: atomic, and never a second (temp) copy in the destination.

Real files in a temporary directory; nothing is faked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.publish import _write_atomically


def test_a_stale_temp_from_a_killed_attempt_is_swept(tmp_path: Path) -> None:
    # what a worker SIGKILLed between its temp write and its os.replace leaves behind
    stale = tmp_path / ".job-1.md.4242.tmp"
    stale.write_bytes(b"the article, half a publish ago")
    unrelated = tmp_path / ".other-job.md.1.tmp"
    unrelated.write_bytes(b"another job's attempt in flight")
    _write_atomically(tmp_path / "job-1.md", b"the article")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".other-job.md.1.tmp", "job-1.md"]
    assert (tmp_path / "job-1.md").read_bytes() == b"the article"


def test_a_failed_attempt_removes_its_temp_and_keeps_the_old_article(tmp_path: Path) -> None:
    target = tmp_path / "job-1.md"
    target.mkdir()  # os.replace of a file onto a non-empty directory fails
    (target / "keep").write_text("x", encoding="utf-8")
    with pytest.raises(OSError):
        _write_atomically(target, b"the article")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job-1.md"]


def test_retry_overwrites_in_place_with_one_copy(tmp_path: Path) -> None:
    target = tmp_path / "out" / "job-1.md"
    _write_atomically(target, b"v")
    _write_atomically(target, b"v")
    assert [p.name for p in target.parent.iterdir()] == ["job-1.md"]
