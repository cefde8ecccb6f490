"""Fixtures for the store tests: every store test runs once on a SQLite file and once on
PostgreSQL (URL from ``PRESSROOM_TEST_POSTGRES_URL``).

Without that variable the PostgreSQL half skips with a visible reason, except under
``PRESSROOM_CI=1`` where a missing URL fails the test. PostgreSQL isolation: each test
starts by dropping the store's tables, so it sees an empty, freshly migrated schema; the
package leaves the database empty and migrated to head when it is done.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from artifacts import ArtifactStore, Principal, Scope, open_store

STORE_TABLES = ("receipts", "checkpoints", "manifests", "artifacts", "blobs", "alembic_version")


def postgres_url() -> str:
    """The test PostgreSQL URL, or skip (locally) / fail (CI) when it is not configured."""
    url = os.environ.get("PRESSROOM_TEST_POSTGRES_URL")
    if url:
        return url
    if os.environ.get("PRESSROOM_CI") == "1":
        pytest.fail("PRESSROOM_CI=1 but PRESSROOM_TEST_POSTGRES_URL is not set")
    pytest.skip("PostgreSQL store tests skipped: PRESSROOM_TEST_POSTGRES_URL is not set")


async def reset_postgres(url: str) -> None:
    """Drop the store's tables so the test starts from an empty database."""
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text(f"DROP TABLE IF EXISTS {', '.join(STORE_TABLES)} CASCADE"))
    finally:
        await engine.dispose()


async def _leave_migrated(url: str) -> None:
    await reset_postgres(url)
    store = await open_store(url, migrate=True)
    await store.close()


@pytest.fixture(scope="package", autouse=True)
def leave_postgres_migrated() -> Iterator[None]:
    """Tests here drop and downgrade the store's tables; leave the shared test database
    empty but at the migration head for whatever test suite runs next."""
    yield
    url = os.environ.get("PRESSROOM_TEST_POSTGRES_URL")
    if url:
        asyncio.run(_leave_migrated(url))


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
async def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """URL of an empty (unmigrated) database of each engine."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    url = postgres_url()
    await reset_postgres(url)
    return url


@pytest.fixture
async def store(empty_db_url: str) -> AsyncIterator[ArtifactStore]:
    """A migrated store on each engine."""
    s = await open_store(empty_db_url, migrate=True)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
def scope() -> Scope:
    return Scope(tenant="acme", project="newsroom", task="task-1")


@pytest.fixture
def alice() -> Principal:
    """A writer/reader of tenant acme, project newsroom."""
    return Principal(principal_id="alice", tenant="acme", project="newsroom")


@pytest.fixture
def mallory() -> Principal:
    """Another tenant's principal, guessing ids."""
    return Principal(principal_id="mallory", tenant="globex", project="newsroom")


@pytest.fixture
def neighbour() -> Principal:
    """Same tenant as alice, other project."""
    return Principal(principal_id="bob", tenant="acme", project="sports")
