"""One open transaction as the store functions see it: plain SQL in, plain rows out.

The store functions (``revisions``, ``sealed_records``, ``blobio``) are synchronous and run a
whole operation inside one transaction, so a put is one hand-off to the database side
instead of one per statement (through SQLAlchemy's ORM and the aiosqlite adapter a put
cost ≈3.6 ms of CPU and 21 thread hand-offs for its 7 statements). They speak only the
SQL both engines accept (``:name`` parameters, ``ON CONFLICT … DO NOTHING``), read JSON
columns as text (``CAST(col AS TEXT)``) and leave the remaining differences to ``Tx``:

* ``SqliteTx``: a ``sqlite3`` connection used on the runner's thread (see ``txrunner``);
* ``PgTx``: a synchronous SQLAlchemy ``Connection`` lent by ``AsyncConnection.run_sync``
  (asyncpg underneath), with each SQL string compiled once.

Constraint violations surface as ``ConstraintRefused`` on both, so the store decides what
they mean (a lost race, a refused write) without knowing the driver.
"""

from __future__ import annotations

import functools
import sqlite3
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError as SAIntegrityError

from artifacts.errors import StoreError

__all__ = ["ConstraintRefused", "PgTx", "SqliteTx", "Tx"]

Params = dict[str, Any] | None
# SQLAlchemy's SQLite DATETIME text layout, which existing store files already hold.
_SQLITE_TIME = "%Y-%m-%d %H:%M:%S.%f"


class ConstraintRefused(Exception):
    """The database refused a statement on a constraint (unique, foreign key, trigger)."""


class Tx:
    """An open transaction; ``writable`` is fixed when it begins."""

    dialect: str

    def __init__(self, writable: bool) -> None:
        self.writable = writable

    def require_write(self) -> None:
        """Writes must start in a write transaction (BEGIN IMMEDIATE on SQLite)."""
        if not self.writable:
            raise StoreError(
                "this transaction already began a read transaction; start writes in a write "
                "transaction (ArtifactStore's writes, or Database.transaction(write=True))"
            )

    def one(self, sql: str, params: Params = None) -> Any:
        """The first row (a tuple) or ``None``."""
        raise NotImplementedError

    def all(self, sql: str, params: Params = None) -> list[Any]:
        raise NotImplementedError

    def run(self, sql: str, params: Params = None) -> int:
        """Execute a write; the number of rows it changed."""
        raise NotImplementedError

    def when(self, moment: datetime) -> Any:
        """The bind value of a UTC timestamp column."""
        raise NotImplementedError

    def time_of(self, value: Any) -> datetime:
        """A timestamp column's value as an aware UTC datetime."""
        raise NotImplementedError


class SqliteTx(Tx):
    dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection, writable: bool) -> None:
        super().__init__(writable)
        self.conn = conn

    def one(self, sql: str, params: Params = None) -> Any:
        return self.conn.execute(sql, params or {}).fetchone()

    def all(self, sql: str, params: Params = None) -> list[Any]:
        return self.conn.execute(sql, params or {}).fetchall()

    def run(self, sql: str, params: Params = None) -> int:
        try:
            return self.conn.execute(sql, params or {}).rowcount
        except sqlite3.IntegrityError as exc:
            raise ConstraintRefused(_first_line(exc)) from exc

    def when(self, moment: datetime) -> Any:
        return moment.astimezone(UTC).strftime(_SQLITE_TIME)

    def time_of(self, value: Any) -> datetime:
        return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)


@functools.lru_cache(maxsize=256)
def _compiled(sql: str) -> Any:
    # One TextClause per SQL string, so SQLAlchemy's statement cache recognises it.
    return text(sql)


class PgTx(Tx):
    dialect = "postgresql"

    def __init__(self, conn: Connection, writable: bool) -> None:
        super().__init__(writable)
        self.conn = conn

    def one(self, sql: str, params: Params = None) -> Any:
        return self.conn.execute(_compiled(sql), params or {}).first()

    def all(self, sql: str, params: Params = None) -> list[Any]:
        return list(self.conn.execute(_compiled(sql), params or {}))

    def run(self, sql: str, params: Params = None) -> int:
        try:
            count: int = self.conn.execute(_compiled(sql), params or {}).rowcount
        except SAIntegrityError as exc:
            raise ConstraintRefused(_first_line(exc.orig if exc.orig is not None else exc)) \
                from exc
        return count

    def when(self, moment: datetime) -> Any:
        return moment.astimezone(UTC)

    def time_of(self, value: Any) -> datetime:
        moment: datetime = value
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
