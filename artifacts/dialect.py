"""Everything that differs between SQLite and PostgreSQL, in one class per engine.

The store code above this module is engine-agnostic: it asks the dialect object for
engine options, the runner of store operations, and the migration lock. SQLite needs the
most care: WAL, foreign keys and a busy timeout on every connection, and ``BEGIN
IMMEDIATE`` for write transactions so concurrent writers queue on the busy timeout
instead of deadlocking on a read-to-write lock upgrade ("database is locked").
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any, ClassVar

from sqlalchemy import event, text
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import NullPool

from artifacts.errors import DatabaseUnavailable
from artifacts.txrunner import PgRunner, Runner, SqliteRunner

__all__ = [
    "WRITE_OPTION",
    "Dialect",
    "PostgresDialect",
    "SqliteDialect",
    "dialect_for",
]

# Execution option marking a connection whose transaction will write (BEGIN IMMEDIATE).
WRITE_OPTION = "pressroom_write"


class Dialect:
    """Engine options and SQL differences of one database engine."""

    name: ClassVar[str]
    drivername: ClassVar[str]

    def __init__(self, url: URL) -> None:
        self.url = url

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``create_async_engine``."""
        return {}

    def install(self, engine: AsyncEngine) -> None:
        """Attach per-connection setup and transaction-begin hooks to ``engine``."""

    def runner(self, engine: AsyncEngine) -> Runner:
        """What runs store operations (see ``artifacts.txrunner``)."""
        raise NotImplementedError

    def lock_for_migration(self, connection: Connection) -> None:
        """Serialize concurrent migration runs (called inside the migration transaction)."""

    def target(self) -> str:
        """Where the database lives, for error messages (never includes a password)."""
        raise NotImplementedError

    def prepare(self) -> None:
        """Anything needed before the first connection (e.g. the SQLite directory)."""


class SqliteDialect(Dialect):
    """One file, WAL, foreign keys, busy timeout, BEGIN IMMEDIATE for writes (the store's
    own connections: ``runner.SqliteRunner``; aiosqlite serves migrations and admin SQL)."""

    name = "sqlite"
    drivername = "sqlite+aiosqlite"
    busy_timeout_ms = 60_000

    def engine_kwargs(self) -> dict[str, Any]:
        # The sqlite3 `timeout` is the busy timeout the driver applies while waiting for locks.
        # No pool: the store's own connections are the runner's, and an engine connection
        # kept open after a migration check would outlive a read-only spell of the file —
        # SQLite opens a file it may not write read-only, silently, and every connection
        # of the process then shares that read-only view (``txrunner._read_only``).
        return {
            "connect_args": {"timeout": self.busy_timeout_ms / 1000},
            "poolclass": NullPool,
        }

    def install(self, engine: AsyncEngine) -> None:
        busy = self.busy_timeout_ms

        @event.listens_for(engine.sync_engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            # Let SQLAlchemy's "begin" event emit BEGIN itself (the driver's implicit
            # BEGIN is DEFERRED and breaks SAVEPOINT handling).
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute("PRAGMA foreign_keys=ON")
                cursor.execute(f"PRAGMA busy_timeout={busy}")
                cursor.execute("PRAGMA synchronous=NORMAL")
            finally:
                cursor.close()

        @event.listens_for(engine.sync_engine, "begin")
        def _on_begin(conn: Connection) -> None:
            # A writer takes the write lock up front; readers stay DEFERRED so WAL lets
            # them run beside the writer.
            if conn.get_execution_options().get(WRITE_OPTION):
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                conn.exec_driver_sql("BEGIN")

    def runner(self, engine: AsyncEngine) -> Runner:
        assert self.url.database is not None  # prepare() refused anything else
        return SqliteRunner(self.url.database, busy_timeout_s=self.busy_timeout_ms / 1000)

    def target(self) -> str:
        return f"SQLite file {self.url.database}"

    def prepare(self) -> None:
        from pathlib import Path

        database = self.url.database
        if not database or database == ":memory:":
            raise DatabaseUnavailable(
                "the store needs a SQLite file, not an in-memory database (each pooled "
                "connection would see its own empty database)"
            )
        parent = Path(database).expanduser().parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatabaseUnavailable(
                f"cannot create the directory {parent} for SQLite file {database}: {exc}"
            ) from None
        _ensure_wal(database, self.busy_timeout_ms / 1000)


def _ensure_wal(database: str, timeout_s: float) -> None:
    """Put the file in WAL mode once, before any pooled connection opens.

    WAL is a property of the file and persists, so later connections' ``journal_mode=WAL``
    is a no-op. Switching needs the file to itself, and SQLite answers "database is
    locked" at once — without its busy handler — when two connections of a fresh file try
    together (several workers or tasks opening the store for the first time), so the
    switch is retried here until the busy timeout.
    """
    deadline = time.monotonic() + timeout_s
    try:
        conn = sqlite3.connect(database, timeout=timeout_s, isolation_level=None)
    except sqlite3.Error as exc:
        raise DatabaseUnavailable(f"cannot open SQLite file {database}: {exc}") from None
    try:
        while True:
            try:
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            except sqlite3.Error as exc:  # e.g. "file is not a database": named, not raw
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise DatabaseUnavailable(
                        f"cannot use SQLite file {database}: {exc}") from None
                time.sleep(0.02)
                continue
            if str(mode).lower() != "wal":
                raise DatabaseUnavailable(
                    f"SQLite file {database} cannot use WAL (journal_mode stays {mode!r})")
            return
    finally:
        conn.close()


class PostgresDialect(Dialect):
    """asyncpg: server-side concurrency; the unique constraint arbitrates racing writers."""

    name = "postgresql"
    drivername = "postgresql+asyncpg"
    connect_timeout_s = 10
    # Arbitrary constant key for pg_advisory_xact_lock: "pressroom" in ASCII, truncated.
    migration_lock_key = 0x7072657373726F

    def engine_kwargs(self) -> dict[str, Any]:
        return {
            "connect_args": {"timeout": self.connect_timeout_s},
            "pool_size": 10,
            "max_overflow": 20,
            "pool_pre_ping": True,
        }

    def runner(self, engine: AsyncEngine) -> Runner:
        return PgRunner(engine)

    def lock_for_migration(self, connection: Connection) -> None:
        connection.execute(
            text("SELECT pg_advisory_xact_lock(:k)"), {"k": self.migration_lock_key}
        )

    def target(self) -> str:
        host = self.url.host or "localhost"
        port = self.url.port or 5432
        return f"PostgreSQL at {host}:{port}/{self.url.database or ''}"


_BY_BACKEND: dict[str, type[Dialect]] = {
    "sqlite": SqliteDialect,
    "postgresql": PostgresDialect,
}


def dialect_for(url: str | URL) -> Dialect:
    """Pick the dialect for ``url``, forcing the async driver of that engine."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except Exception:  # sqlalchemy raises ArgumentError with the URL text in it
        raise DatabaseUnavailable("database URL cannot be parsed (check its syntax)") from None
    backend = parsed.get_backend_name()
    cls = _BY_BACKEND.get(backend)
    if cls is None:
        raise DatabaseUnavailable(
            f"unsupported database engine {backend!r}; use sqlite+aiosqlite:///path or "
            "postgresql+asyncpg://user@host/db"
        )
    parsed = parsed.set(drivername=cls.drivername)
    if cls is SqliteDialect and parsed.database and parsed.database.startswith("~"):
        from pathlib import Path

        parsed = parsed.set(database=str(Path(parsed.database).expanduser()))
    return cls(parsed)
