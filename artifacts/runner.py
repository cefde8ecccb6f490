"""Running a whole store operation inside one transaction, off the event loop.

``Database.call(write, fn, …)`` runs ``fn(tx, …)`` between BEGIN and COMMIT (ROLLBACK on
any error) and returns its result; ``Database.transaction(write)`` keeps one transaction
open across several ``run`` calls (tests and callers that group operations).

* SQLite (``SqliteRunner``): a small pool of ``sqlite3`` connections and as many threads.
  The whole operation runs on one thread: one hand-off per store call, where SQLAlchemy's
  aiosqlite adapter made one per driver call. A waiting writer blocks its thread in
  SQLite's busy handler, never the event loop. Each transaction holds one of ``size``
  slots and there are ``size`` threads, so a transaction that is open between two runs
  always finds a thread for its next statement (no pool deadlock behind blocked writers).
* PostgreSQL (``PgRunner``): the SQLAlchemy async engine (asyncpg); the operation runs in
  ``AsyncConnection.run_sync``, without the ORM session.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from artifacts.sqltx import PgTx, SqliteTx, Tx

__all__ = ["PgRunner", "Runner", "SqliteRunner", "TxHandle"]

T = TypeVar("T")


class TxHandle:
    """An open transaction lent to a caller: ``await handle.run(fn, *args)`` runs
    ``fn(tx, *args)`` inside it."""

    def __init__(self, runner: Runner, tx: Tx) -> None:
        self._runner, self.tx = runner, tx

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await self._runner.step(self.tx, fn, args, kwargs)

    async def execute(self, sql: str, params: dict[str, Any] | None = None) -> int:
        """One raw statement (admin and tests); the number of rows it changed."""
        def statement(tx: Tx) -> int:
            return tx.run(sql, params)

        return await self.run(statement)


class Runner:
    async def call(self, write: bool, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        async with self.transaction(write) as handle:
            return await handle.run(fn, *args, **kwargs)

    def transaction(self, write: bool) -> AbstractAsyncContextManager[TxHandle]:
        raise NotImplementedError

    async def step(self, tx: Tx, fn: Callable[..., T], args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> T:
        raise NotImplementedError

    async def close(self) -> None:
        """Release connections and threads."""


class SqliteRunner(Runner):
    def __init__(self, path: str, *, busy_timeout_s: float, size: int = 8) -> None:
        self._path, self._timeout, self._size = path, busy_timeout_s, size
        self._executor: ThreadPoolExecutor | None = None
        self._idle: list[sqlite3.Connection] = []
        self._slots: asyncio.Semaphore | None = None

    def _open(self) -> sqlite3.Connection:
        # Autocommit mode: the runner issues BEGIN [IMMEDIATE] / COMMIT itself.
        conn = sqlite3.connect(self._path, timeout=self._timeout, isolation_level=None,
                               check_same_thread=False)
        for pragma in ("PRAGMA journal_mode=WAL", "PRAGMA foreign_keys=ON",
                       f"PRAGMA busy_timeout={int(self._timeout * 1000)}",
                       "PRAGMA synchronous=NORMAL"):
            conn.execute(pragma)
        return conn

    async def _in_thread(self, fn: Callable[[], T]) -> T:
        # The thread owns the connection until fn returns: a cancelled caller still waits
        # for it (shield), so a connection is never handed on while a statement runs.
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self._size,
                                                thread_name_prefix="pressroom-sqlite")
        future = asyncio.get_running_loop().run_in_executor(self._executor, fn)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            await asyncio.wait([future])
            raise

    async def call(self, write: bool, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        # BEGIN, the operation and COMMIT in a single hand-off to one thread.
        def whole(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                result = fn(SqliteTx(conn, write), *args, **kwargs)
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise
            return result

        async with self._connection() as box:
            return await self._in_thread(lambda: whole(_opened(box, self._open)))

    @asynccontextmanager
    async def transaction(self, write: bool) -> AsyncIterator[TxHandle]:
        async with self._connection() as box:
            def begin() -> None:
                _opened(box, self._open).execute("BEGIN IMMEDIATE" if write else "BEGIN")

            try:
                await self._in_thread(begin)
                yield TxHandle(self, SqliteTx(box[0], write))
                await self._in_thread(lambda: box[0].execute("COMMIT"))
            except BaseException:
                if box:
                    await self._in_thread(lambda: _rollback(box[0]))
                raise

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[list[sqlite3.Connection]]:
        """A pool slot and a box for its connection (idle one, or opened on the thread).

        The box holds the connection as soon as it exists, so whatever happens (an error,
        a cancellation) the transaction has ended before the connection is reused.
        """
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._size)
        async with self._slots:
            box: list[sqlite3.Connection] = [self._idle.pop()] if self._idle else []
            try:
                yield box
            finally:
                if box:
                    if box[0].in_transaction:  # the rollback itself was interrupted
                        box[0].close()
                    else:
                        self._idle.append(box[0])

    async def step(self, tx: Tx, fn: Callable[..., T], args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> T:
        return await self._in_thread(lambda: fn(tx, *args, **kwargs))

    async def close(self) -> None:
        # Like disposing an engine: resources go, the runner stays usable (it reopens).
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)


def _opened(box: list[sqlite3.Connection],
            open_connection: Callable[[], sqlite3.Connection]) -> sqlite3.Connection:
    if not box:
        box.append(open_connection())
    return box[0]


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")


class PgRunner(Runner):
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    @asynccontextmanager
    async def transaction(self, write: bool) -> AsyncIterator[TxHandle]:
        async with self._engine.connect() as conn, conn.begin():
            yield _PgHandle(self, conn, write)

    async def step(self, tx: Tx, fn: Callable[..., T], args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> T:
        raise AssertionError("PostgreSQL steps run through their handle's connection")


class _PgHandle(TxHandle):
    def __init__(self, runner: Runner, conn: AsyncConnection, write: bool) -> None:
        assert conn.sync_connection is not None  # connected: the context manager entered
        super().__init__(runner, PgTx(conn.sync_connection, write))
        self._conn, self._write = conn, write

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        # run_sync lends the synchronous Connection inside SQLAlchemy's greenlet, where
        # its statements may await asyncpg.
        write = self._write
        return await self._conn.run_sync(lambda sync: fn(PgTx(sync, write), *args, **kwargs))
