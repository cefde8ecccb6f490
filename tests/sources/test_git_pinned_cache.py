"""Reads at a resolved commit are reused per worker; the checks that can change are not.

A second ``search`` of the same pin must give the same result while spawning only the
repository and commit checks (no tree listing, no blob read); once the repository or the
commit is gone, the call fails as before, whatever was cached.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import activities.sources.gitrepo as gitrepo
from activities.research_tools import ToolRejected
from contracts.source_specs import GitSourceSpec
from examples.build_fixtures import EXPECTED_COMMITS
from tests.sources.conftest import tool

V2 = EXPECTED_COMMITS["backoff-lib"]["v2"]


async def test_second_read_reuses_reads_at_the_commit(
    fresh_fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = fresh_fixtures / "repos" / "backoff-lib"
    spec = GitSourceSpec(name="backoff-lib", repo=str(repo), commit=V2)
    commands: list[str] = []
    streamed: list[int] = []
    real, real_stream = gitrepo.run_git, gitrepo._stream_blobs

    async def counting(repo_dir: str, *args: str, **kwargs: object) -> tuple[int, bytes]:
        commands.append(args[0])
        return await real(repo_dir, *args, **kwargs)  # type: ignore[arg-type]

    async def counting_stream(repo_dir: str, blobs: Sequence[tuple[str, int]],
                              *args: Any) -> None:
        streamed.append(len(blobs))
        await real_stream(repo_dir, blobs, *args)

    monkeypatch.setattr(gitrepo, "run_git", counting)
    monkeypatch.setattr(gitrepo, "_stream_blobs", counting_stream)
    first = await tool("search", spec, query="jitter")
    assert first["files"]
    assert "ls-tree" in commands and sum(streamed) > 0
    commands.clear()
    streamed.clear()
    second = await tool("search", spec, query="jitter")
    assert commands == ["rev-parse", "rev-parse"]
    assert sum(streamed) == 0, "every blob came from the worker's cache"
    assert second == first

    shutil.rmtree(repo)
    with pytest.raises(ToolRejected, match="does not exist") as gone:
        await tool("search", spec, query="jitter")
    assert gone.value.kind == "source_unavailable"


async def test_cached_commit_still_checked(fresh_fixtures: Path) -> None:
    repo = fresh_fixtures / "repos" / "backoff-lib"
    spec = GitSourceSpec(name="backoff-lib", repo=str(repo), commit=V2)
    assert (await tool("search", spec, query="jitter"))["files"]
    missing = spec.model_copy(update={"commit": "0123456789abcdef0123456789abcdef01234567"})
    with pytest.raises(ToolRejected, match="not found") as refused:
        await tool("search", missing, query="jitter")
    assert refused.value.kind == "source_unavailable"
