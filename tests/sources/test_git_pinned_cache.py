"""Reads at a resolved commit are reused per worker; the checks that can change are not.

A second acquisition of the same pin must give the same records while spawning only the
repository and commit checks; once the repository or the commit is gone, the acquisition
fails as before, whatever was cached.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from activities.sources import acquire, gitrepo
from context.vocabulary import AcquisitionOutcome
from contracts.source_specs import GitSourceSpec
from examples.build_fixtures import EXPECTED_COMMITS
from tests.sources.conftest import AS_OF, TOPICS, locations, roots

V2 = EXPECTED_COMMITS["backoff-lib"]["v2"]


async def test_second_acquisition_reuses_reads_at_the_commit(
    fresh_fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = fresh_fixtures / "repos" / "backoff-lib"
    spec = GitSourceSpec(name="backoff-lib", repo=str(repo), commit=V2)
    commands: list[str] = []
    real = gitrepo.run_git

    async def counting(repo_dir: str, *args: str, **kwargs: object) -> tuple[int, bytes]:
        commands.append(args[0])
        return await real(repo_dir, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gitrepo, "run_git", counting)
    first = await acquire(spec, TOPICS, call_id="c1", as_of=AS_OF, locations=locations(),
                          roots=roots())
    assert first.outcome is AcquisitionOutcome.RETRIEVED and first.records
    assert {"ls-tree", "grep", "cat-file"} <= set(commands)
    commands.clear()
    second = await acquire(spec, TOPICS, call_id="c1", as_of=AS_OF, locations=locations(),
                           roots=roots())
    assert commands == ["rev-parse", "rev-parse"]
    assert [r.model_dump() for r in second.records] == [r.model_dump() for r in first.records]

    shutil.rmtree(repo)
    gone = await acquire(spec, TOPICS, call_id="c1", as_of=AS_OF, locations=locations(),
                         roots=roots())
    assert gone.outcome is AcquisitionOutcome.RETRIEVAL_FAILED
    assert gone.records == []


async def test_cached_commit_still_checked(fresh_fixtures: Path) -> None:
    repo = fresh_fixtures / "repos" / "backoff-lib"
    spec = GitSourceSpec(name="backoff-lib", repo=str(repo), commit=V2)
    assert (await acquire(spec, TOPICS, call_id="c", as_of=AS_OF, locations=locations(),
                          roots=roots())).records
    missing = spec.model_copy(update={"commit": "0123456789abcdef0123456789abcdef01234567"})
    result = await acquire(missing, TOPICS, call_id="c", as_of=AS_OF, locations=locations(),
                           roots=roots())
    assert result.outcome is AcquisitionOutcome.RETRIEVAL_FAILED
