"""The SQLite store after a read-only spell: a store opened while its folder was read-only
(by a worker started after another was killed) writes again once the folder is writable —
no restart needed (no server needed; needs the right to mount)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

import artifacts
from artifacts import ArtifactKind, Principal, Scope
from artifacts.errors import DatabaseUnavailable
from tests.faults.services import bind_read_only, mounted, unmount

ALICE = Principal(principal_id="alice", tenant="acme", project="docs")
SCOPE = Scope(tenant="acme", project="docs", task="t1")
REPO_ROOT = Path(__file__).resolve().parents[2]

#: a worker-like process: opens the store, writes revision 1, and waits to be killed
WRITER = """
import asyncio, sys, time
sys.path.insert(0, {root!r})
import artifacts
from artifacts import ArtifactKind, Principal, Scope

async def main():
    store = await artifacts.open_store({url!r})
    await store.put(ArtifactKind.DOCUMENT, "d", b"v1", trust="trusted_state",
                    principal=Principal(principal_id="alice", tenant="acme", project="docs"),
                    scope=Scope(tenant="acme", project="docs", task="t1"),
                    parent_revision=None)
    print("written", flush=True)
    time.sleep(600)

asyncio.run(main())
"""


@pytest_asyncio.fixture
async def folder(tmp_path: Path) -> AsyncIterator[Path]:
    yield tmp_path
    if mounted(tmp_path):
        unmount(tmp_path)


async def test_a_store_opened_read_only_writes_once_writable(folder: Path) -> None:
    url = f"sqlite+aiosqlite:///{folder / 'store.db'}"
    writer = subprocess.Popen([sys.executable, "-c", WRITER.format(root=str(REPO_ROOT),
                                                                   url=url)],
                              stdout=subprocess.PIPE)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == b"written"
    finally:
        writer.send_signal(signal.SIGKILL)  # its WAL and shared-memory files stay behind
        writer.wait(10)
    why = bind_read_only(folder)
    if why is not None:
        pytest.skip(f"cannot mount here: {why}")
    store = await artifacts.open_store(url)  # the next worker, while it is read-only
    try:
        # reads work, on the event loop's connection and on a pooled one
        assert (await store.head(ArtifactKind.DOCUMENT, "d", principal=ALICE)) is not None
        async with store.db.transaction(write=False) as tx:
            await tx.execute("SELECT 1")
        with pytest.raises(DatabaseUnavailable, match="readonly"):
            await store.put(ArtifactKind.DOCUMENT, "d", b"v2", principal=ALICE, scope=SCOPE,
                            trust="trusted_state", parent_revision=1)
        unmount(folder)  # the operator's fix
        rec = await store.put(ArtifactKind.DOCUMENT, "d", b"v2", principal=ALICE, scope=SCOPE,
                              trust="trusted_state", parent_revision=1)
        assert rec.revision == 2
        assert [r.revision for r in await store.history(ArtifactKind.DOCUMENT, "d",
                                                        principal=ALICE)] == [1, 2]
    finally:
        await store.close()
