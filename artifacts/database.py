"""Engine and session plumbing: which database, how to reach it, how a write begins.

The caller names the database by URL (``sqlite+aiosqlite:///path`` or
``postgresql+asyncpg://…``); which one is configuration, decided by the caller (Pressroom's
``settings.Settings.store_url``), never read here. Connection failures become
``DatabaseUnavailable`` naming the host or file, never a driver trace.

Store operations run through ``Database.call`` / ``Database.transaction`` (see
``txrunner``); the SQLAlchemy engine and its sessions (``read`` / ``write``) remain for
migrations and administrative SQL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import make_url, text
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from artifacts.dialect import WRITE_OPTION, Dialect, dialect_for
from artifacts.errors import DatabaseUnavailable, StoreError
from artifacts.sqltx import ConstraintRefused
from artifacts.txrunner import Runner, TxHandle

__all__ = [
    "Database",
    "begin_write",
    "connect",
    "redact",
]

T = TypeVar("T")


def redact(url: str) -> str:
    """``url`` without its password, for printing."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL may hold a password anywhere: show nothing of it
        return "<unparsable database URL>"


@dataclass
class Database:
    """An engine, its dialect and a session factory, opened together."""

    engine: AsyncEngine
    dialect: Dialect
    sessions: async_sessionmaker[AsyncSession]
    runner: Runner

    async def dispose(self) -> None:
        await self.runner.close()
        await self.engine.dispose()

    async def call(self, write: bool, fn: Callable[..., T], *args: Any, offload: bool = False,
                   **kwargs: Any) -> T:
        """``fn(tx, *args, **kwargs)`` in its own transaction (a write one if ``write``):
        committed when it returns, rolled back when it raises. ``offload``: never on the
        event loop (an operation on a large body)."""
        with self._translated("write" if write else "read"):
            return await self.runner.call(write, fn, *args, offload=offload, **kwargs)

    @asynccontextmanager
    async def transaction(self, write: bool) -> AsyncIterator[TxHandle]:
        """One transaction across several ``await handle.run(fn, ...)`` calls."""
        with self._translated("write" if write else "read"):
            async with self.runner.transaction(write) as handle:
                yield handle

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        """A session whose transaction writes: committed on success, rolled back on error."""
        with self._translated("write"):
            async with self.sessions() as session:
                try:
                    await begin_write(session)
                    yield session
                    await session.commit()
                except BaseException:
                    await session.rollback()
                    raise

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A read-only session (its transaction is rolled back at the end)."""
        with self._translated("read"):
            async with self.sessions() as session:
                yield session

    @contextmanager
    def _translated(self, action: str) -> Iterator[None]:
        # Driver errors that escape the store functions become typed store errors here.
        try:
            yield
        except (OperationalError, InterfaceError, sqlite3.OperationalError,
                sqlite3.InterfaceError) as exc:
            raise DatabaseUnavailable(
                f"{action} failed on {self.dialect.target()}: {_reason(exc)}"
            ) from exc
        except (DBAPIError, sqlite3.DatabaseError, ConstraintRefused) as exc:
            raise StoreError(
                f"{action} failed on {self.dialect.target()}: {_reason(exc)}"
            ) from exc


async def begin_write(session: AsyncSession) -> None:
    """Start ``session``'s transaction as a write transaction (BEGIN IMMEDIATE on SQLite).

    Must be called before the session touches the database; on SQLite, upgrading a read
    transaction to a write one can fail at once with "database is locked".
    """
    if session.in_transaction():
        conn = (await session.connection()).sync_connection
        if conn is None or not conn.get_execution_options().get(WRITE_OPTION):
            raise StoreError(
                "this session already began a read transaction; start writes with "
                "begin_write(session) (or ArtifactStore's write session) before any query"
            )
        return
    await session.connection(execution_options={WRITE_OPTION: True})


async def connect(url: str) -> Database:
    """Open an engine for ``url`` and prove it answers."""
    dialect = dialect_for(url)
    dialect.prepare()
    engine = create_async_engine(dialect.url, **dialect.engine_kwargs())
    dialect.install(engine)
    try:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:
        await engine.dispose()
        raise DatabaseUnavailable(
            f"cannot reach {dialect.target()}: {_reason(exc)}"
        ) from exc
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    return Database(engine=engine, dialect=dialect, sessions=sessions,
                    runner=dialect.runner(engine))


def _reason(exc: BaseException) -> str:
    # Driver errors arrive wrapped; the innermost message is the useful one.
    inner: BaseException = exc
    while inner.__cause__ is not None:
        inner = inner.__cause__
    orig = getattr(exc, "orig", None)
    message = str(orig if orig is not None else inner).strip().splitlines()
    name = type(inner).__name__
    return f"{name}: {message[0]}" if message else name
