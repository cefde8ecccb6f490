"""Database plumbing (``artifacts.database``): SQLite write transactions take the write
lock up front, a session or transaction that already read cannot silently turn into a
writer, and the PostgreSQL fixture's skip/fail rule."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import select

from artifacts import ArtifactKind, ArtifactStore, Principal, Scope, StoreError, open_store
from artifacts.database import begin_write
from artifacts.revisions import put_artifact
from artifacts.tables import Blob
from artifacts.txrunner import SqliteRunner
from tests.artifacts.conftest import postgres_url


async def test_sqlite_writes_begin_immediate_reads_deferred(
    tmp_path: Path, alice: Principal, scope: Scope
) -> None:
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 's.db'}")
    begins: list[str] = []

    def record(statement: str) -> None:
        if statement.startswith("BEGIN"):
            begins.append(statement)

    # Store operations run on the runner's own sqlite3 connections (opened on first use,
    # after the migration): trace every statement they send.
    runner = store.db.runner
    assert isinstance(runner, SqliteRunner)
    open_connection = runner._open

    def traced() -> sqlite3.Connection:
        conn = open_connection()
        conn.set_trace_callback(record)
        return conn

    runner._open = traced  # type: ignore[method-assign]
    try:
        await store.put(ArtifactKind.DOCUMENT, "d", b"x", principal=alice, scope=scope,
                        trust="trusted_state", parent_revision=None)
        await store.get(ArtifactKind.DOCUMENT, "d", principal=alice)
        await store.put_receipt("r", body={}, scope=scope)
    finally:
        await store.close()
    assert begins == ["BEGIN IMMEDIATE", "BEGIN", "BEGIN IMMEDIATE"]


async def test_read_session_cannot_become_a_writer(
    store: ArtifactStore, alice: Principal, scope: Scope
) -> None:
    async with store.db.sessions() as session:
        await session.scalar(select(Blob.hash).limit(1))
        with pytest.raises(StoreError, match="already began a read transaction"):
            await begin_write(session)
    async with store.db.sessions() as session:
        await begin_write(session)
        await begin_write(session)  # idempotent inside a write transaction
        await session.commit()
    # The store's own transactions: a read one refuses the put, a write one takes it.
    async with store.db.transaction(write=False) as tx:
        await tx.run(lambda t: t.one("SELECT 1"))
        with pytest.raises(StoreError, match="already began a read transaction"):
            await tx.run(put_artifact, ArtifactKind.DOCUMENT, "d", b"x", principal=alice,
                         scope=scope, trust="trusted_state", parent_revision=None)
    assert await store.head(ArtifactKind.DOCUMENT, "d", principal=alice) is None
    async with store.db.transaction(write=True) as tx:
        await tx.run(put_artifact, ArtifactKind.DOCUMENT, "d", b"x", principal=alice,
                     scope=scope, trust="trusted_state", parent_revision=None)
    assert await store.head(ArtifactKind.DOCUMENT, "d", principal=alice) is not None


def test_postgres_tests_fail_in_ci_without_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PRESSROOM_TEST_POSTGRES_URL", raising=False)
    monkeypatch.setenv("PRESSROOM_CI", "1")
    with pytest.raises(pytest.fail.Exception, match="PRESSROOM_CI=1"):
        postgres_url()
    monkeypatch.delenv("PRESSROOM_CI")
    with pytest.raises(pytest.skip.Exception, match="PRESSROOM_TEST_POSTGRES_URL is not set"):
        postgres_url()
    monkeypatch.setenv("PRESSROOM_TEST_POSTGRES_URL", "postgresql+asyncpg://x@h/db")
    assert postgres_url() == "postgresql+asyncpg://x@h/db"


async def test_sqlite_busy_writer_waits_on_a_thread_not_the_loop(
    tmp_path: Path, alice: Principal, scope: Scope, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Store operations start on the event loop with a zero busy timeout; while another
    process holds the write lock, a put falls back to a thread that waits for the lock —
    the loop keeps running meanwhile, and the put lands once the lock is free."""
    import asyncio

    from artifacts import txrunner as runner_module

    monkeypatch.setattr(runner_module, "CHECKPOINT_EVERY", 2)
    path = tmp_path / "s.db"
    store = await open_store(f"sqlite+aiosqlite:///{path}")
    other = sqlite3.connect(path, isolation_level=None)
    try:
        await store.put(ArtifactKind.DOCUMENT, "d", b"v1", principal=alice, scope=scope,
                        trust="trusted_state", parent_revision=None)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        put = asyncio.create_task(store.put(ArtifactKind.DOCUMENT, "d", b"v2", principal=alice,
                                            scope=scope, trust="trusted_state",
                                            parent_revision=1))
        ticks = 0
        for _ in range(20):  # the loop is not blocked by the waiting writer
            await asyncio.sleep(0.01)
            ticks += 1
        assert ticks == 20 and not put.done()
        head = await store.head(ArtifactKind.DOCUMENT, "d", principal=alice)
        assert head is not None and head.revision == 1  # readers are not blocked either
        other.execute("COMMIT")
        rec = await put
        assert rec.revision == 2
        _, body = await store.get(ArtifactKind.DOCUMENT, "d", principal=alice)
        assert body == b"v2"
        # the second commit made on the loop hands a WAL checkpoint to a thread
        await store.put(ArtifactKind.DOCUMENT, "d", b"v3", principal=alice, scope=scope,
                        trust="trusted_state", parent_revision=2)
        runner = store.db.runner
        assert isinstance(runner, SqliteRunner) and runner._checkpoint is not None
    finally:
        other.close()
        await store.close()  # waits for the WAL checkpoint the second commit started
