"""Running a whole store operation inside one transaction, off the event loop.

``Database.call(write, fn, …)`` runs ``fn(tx, …)`` between BEGIN and COMMIT (ROLLBACK on
any error) and returns its result; ``Database.transaction(write)`` keeps one transaction
open across several ``run`` calls (tests and callers that group operations).

* SQLite (``SqliteRunner``): an operation first runs right on the event loop, on a
  connection whose busy timeout is zero: in WAL mode a read never waits and a write only
  waits for another writer, and a statement of a small body takes tens of microseconds —
  less than handing it to a thread, which costs a GIL hand-over (up to the 5 ms switch
  interval when the loop is busy; measured ≈20 ms of CPU per benchmark job, and more
  wall time, because the worker's writes queue behind one lock). If SQLite answers
  "busy" (another process writes), the attempt is rolled back — nothing was committed,
  so running it again is safe — and the operation runs on a thread whose connection
  waits out the full busy timeout, as do puts of large bodies (``offload=True``). The
  pool has ``size`` connections and as many threads; each transaction holds one of
  ``size`` slots, so a transaction open between two runs always finds a thread for its
  next statement (no pool deadlock behind blocked writers). The event-loop connection
  does not checkpoint the WAL itself (that fsyncs); a thread does, every
  ``CHECKPOINT_EVERY`` commits made on the loop.
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
CHECKPOINT_EVERY = 200
_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})


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
    async def call(self, write: bool, fn: Callable[..., T], *args: Any, offload: bool = False,
                   **kwargs: Any) -> T:
        """``fn(tx, *args, **kwargs)`` in one transaction; ``offload``: keep it off the
        event loop (a large body)."""
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
        self._loop_conn: sqlite3.Connection | None = None
        self._loop_commits = 0
        self._checkpoint: asyncio.Task[None] | None = None

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

    async def call(self, write: bool, fn: Callable[..., T], *args: Any, offload: bool = False,
                   **kwargs: Any) -> T:
        if not offload:
            # Still a scheduling point, as any awaited I/O: other tasks run first.
            await asyncio.sleep(0)
            done, result = self._on_loop(write, fn, args, kwargs)
            if done:
                return result  # type: ignore[return-value]

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

    def _on_loop(self, write: bool, fn: Callable[..., T], args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> tuple[bool, T | None]:
        """Run the operation on the event loop's connection; ``(False, None)`` when SQLite
        was busy (the attempt is rolled back and must run on a thread)."""
        conn = self._loop_conn
        if conn is None:
            conn = self._loop_conn = self._open()
            conn.execute("PRAGMA busy_timeout=0")
            conn.execute("PRAGMA wal_autocheckpoint=0")
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            result = fn(SqliteTx(conn, write), *args, **kwargs)
            conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            _rollback(conn)
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF in _BUSY_CODES:
                return False, None
            if _read_only(exc):  # opened while the file was read-only: reopen next time
                self._close_read_only()
            raise
        except BaseException:
            _rollback(conn)
            raise
        if write:
            self._loop_commits += 1
            if self._loop_commits >= CHECKPOINT_EVERY and self._checkpoint is None:
                self._loop_commits = 0
                self._checkpoint = asyncio.get_running_loop().create_task(self._wal_checkpoint())
        return True, result

    async def _wal_checkpoint(self) -> None:
        try:
            async with self._connection() as box:
                await self._in_thread(
                    lambda: _opened(box, self._open).execute("PRAGMA wal_checkpoint(PASSIVE)"))
        except sqlite3.Error:
            pass  # a checkpoint is housekeeping: the next one (or any connection) catches up
        finally:
            self._checkpoint = None

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
            except sqlite3.OperationalError as exc:
                if _read_only(exc):  # opened while the file was read-only
                    if box:
                        box.pop().close()
                    self._close_read_only()
                raise
            finally:
                if box:
                    if box[0].in_transaction:  # the rollback itself was interrupted
                        box[0].close()
                    else:
                        self._idle.append(box[0])

    def _close_read_only(self) -> None:
        """Close the loop's and every idle connection (``_read_only``): they share one
        read-only view of the file's shared memory, which a new connection would join."""
        if self._loop_conn is not None:
            self._loop_conn.close()
            self._loop_conn = None
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    async def step(self, tx: Tx, fn: Callable[..., T], args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> T:
        return await self._in_thread(lambda: fn(tx, *args, **kwargs))

    async def close(self) -> None:
        # Like disposing an engine: resources go, the runner stays usable (it reopens).
        if self._checkpoint is not None:
            await self._checkpoint
        if self._loop_conn is not None:
            self._loop_conn.close()
            self._loop_conn = None
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


def _read_only(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused a write because its connection is read-only.

    SQLite opens a file it may not write (a read-only mount, a file mode without write)
    read-only without a word, and that connection stays read-only after the file is
    writable again; so one that says so is closed, and the next attempt opens afresh.
    """
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_READONLY


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
