"""Alembic migrations: up from empty, down to base and up again with data, on both engines;
the migrated schema matches the models; SQLite self-migrates on first use."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from artifacts import ArtifactKind, Principal, SchemaNotReady, Scope, open_store
from artifacts.database import Database, connect
from artifacts.migrate import current_revision, downgrade, head_revision, upgrade
from artifacts.tables import Base
from settings import Settings

TABLES = {"artifacts", "blobs", "manifests", "checkpoints", "receipts"}


async def _tables(db: Database) -> set[str]:
    async with db.engine.connect() as conn:
        names = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
    return names & (TABLES | {"alembic_version"})


def _diff(connection: Connection) -> list[Any]:
    ctx = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(ctx, Base.metadata))


async def test_up_down_up_with_data(empty_db_url: str, alice: Principal, scope: Scope) -> None:
    db = await connect(empty_db_url)
    try:
        assert await current_revision(db) is None
        assert await _tables(db) == set()
        async with db.engine.connect() as conn:
            assert len(await conn.run_sync(_diff)) >= len(TABLES)  # the check can fail
        assert await upgrade(db) == head_revision()
        assert await _tables(db) == TABLES | {"alembic_version"}
        async with db.engine.connect() as conn:
            assert await conn.run_sync(_diff) == []
        assert await upgrade(db) == head_revision()  # idempotent
    finally:
        await db.dispose()

    store = await open_store(empty_db_url, migrate=False)
    await store.put(ArtifactKind.JOB_SPEC, "job", b"spec", principal=alice, scope=scope,
                    trust="task_authority", parent_revision=None)
    await store.put_manifest("m", run_id="r", step_id="s", status="ready", body={"a": 1},
                             scope=scope)
    await store.put_checkpoint("c", run_id="r", step_id="s", body={"a": 1}, scope=scope)
    await store.put_receipt("k", body={"a": 1}, scope=scope)

    assert await downgrade(store.db, "base") is None
    assert await _tables(store.db) <= {"alembic_version"}
    assert await upgrade(store.db) == head_revision()
    assert await store.head(ArtifactKind.JOB_SPEC, "job", principal=alice) is None
    rec = await store.put(ArtifactKind.JOB_SPEC, "job", b"spec again", principal=alice,
                          scope=scope, trust="task_authority", parent_revision=None)
    assert rec.revision == 1
    await store.close()


async def test_unmigrated_database_is_refused(empty_db_url: str) -> None:
    with pytest.raises(SchemaNotReady, match=r"schema empty.*pressroom db upgrade"):
        await open_store(empty_db_url, migrate=False)
    if empty_db_url.startswith("postgresql"):
        # Servers are migrated explicitly (`pressroom db upgrade`), never implicitly.
        with pytest.raises(SchemaNotReady):
            await open_store(empty_db_url)


async def test_concurrent_first_use_migrates_once(empty_db_url: str) -> None:
    stores = await asyncio.gather(*(open_store(empty_db_url, migrate=True) for _ in range(4)))
    try:
        for s in stores:
            assert await current_revision(s.db) == head_revision()
    finally:
        for s in stores:
            await s.close()


async def test_sqlite_default_lives_under_pressroom_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, alice: Principal, scope: Scope
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("PRESSROOM_HOME", str(home))
    monkeypatch.delenv("PRESSROOM_DATABASE_URL", raising=False)
    monkeypatch.delenv("PRESSROOM_STORE_URL", raising=False)
    url = Settings.from_env(os.environ).store_url
    async with await open_store(url) as store:
        assert store.engine_name == "sqlite"
        await store.put(ArtifactKind.DOCUMENT, "d", b"x", principal=alice, scope=scope,
                        trust="trusted_state", parent_revision=None)
    assert (home / "pressroom.db").is_file()
    async with await open_store(url) as store:  # reopen: already at head, data still there
        assert await store.head(ArtifactKind.DOCUMENT, "d", principal=alice) is not None
        async with store.db.engine.connect() as conn:
            mode = (await conn.exec_driver_sql("PRAGMA journal_mode")).scalar()
            fks = (await conn.exec_driver_sql("PRAGMA foreign_keys")).scalar()
            busy = (await conn.exec_driver_sql("PRAGMA busy_timeout")).scalar()
        assert (mode, fks) == ("wal", 1) and busy is not None and busy >= 1000


async def test_database_url_env_selects_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "elsewhere" / "chosen.db"
    monkeypatch.setenv("PRESSROOM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PRESSROOM_DATABASE_URL", f"sqlite+aiosqlite:///{target}")
    async with await open_store(Settings.from_env(os.environ).store_url):
        pass
    assert target.is_file()
    assert not (tmp_path / "home" / "pressroom.db").exists()


async def test_unknown_schema_revision_is_refused(empty_db_url: str) -> None:
    from sqlalchemy import text

    async with await open_store(empty_db_url, migrate=True) as store:
        async with store.db.write() as s:
            await s.execute(text("UPDATE alembic_version SET version_num = '9999_future'"))
    for migrate in (None, True, False):
        with pytest.raises(SchemaNotReady, match="9999_future, which this code does not know"):
            await open_store(empty_db_url, migrate=migrate)


def test_sqlite_url_with_home_tilde_is_expanded(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    from artifacts.dialect import dialect_for

    monkeypatch.setenv("HOME", str(tmp_path))
    dialect = dialect_for("sqlite:///~/pressroom/x.db")
    assert dialect.url.drivername == "sqlite+aiosqlite"
    assert dialect.url.database == str(tmp_path / "pressroom" / "x.db")
