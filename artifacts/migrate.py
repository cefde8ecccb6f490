"""Run the shipped Alembic migrations programmatically on the store's async engine.

Each run is one transaction (a write transaction on SQLite, an advisory-locked one on
PostgreSQL), so two processes migrating the same database at once cannot interleave.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection

from artifacts.database import Database
from artifacts.dialect import WRITE_OPTION, Dialect

__all__ = ["current_revision", "downgrade", "head_revision", "is_known_revision", "upgrade"]

MIGRATIONS = Path(__file__).parent / "migrations"


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def head_revision() -> str:
    """The newest migration shipped with this package."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None, "no migrations shipped"
    return head


def is_known_revision(revision: str) -> bool:
    """True when ``revision`` is one of the migrations shipped with this package."""
    try:
        return ScriptDirectory.from_config(_config()).get_revision(revision) is not None
    except Exception:  # alembic raises several error types for unknown / bad ids
        return False


async def current_revision(db: Database) -> str | None:
    """The revision the database is at (``None`` for an empty database)."""
    async with db.engine.connect() as conn:
        return await conn.run_sync(
            lambda sync: MigrationContext.configure(sync).get_current_revision()
        )


async def upgrade(db: Database, revision: str = "head") -> str | None:
    """Migrate up to ``revision``; returns the revision reached."""
    await _run(db, "upgrade", revision)
    return await current_revision(db)


async def downgrade(db: Database, revision: str) -> str | None:
    """Migrate down to ``revision`` (``"base"`` drops every table); returns where it ends."""
    await _run(db, "downgrade", revision)
    return await current_revision(db)


async def _run(db: Database, direction: str, revision: str) -> None:
    async with db.engine.connect() as conn:
        conn = await conn.execution_options(**{WRITE_OPTION: True})
        async with conn.begin():
            await conn.run_sync(_apply, db.dialect, direction, revision)


def _apply(connection: Connection, dialect: Dialect, direction: str,
           revision: str) -> None:
    dialect.lock_for_migration(connection)
    config = _config()
    config.attributes["connection"] = connection
    if direction == "upgrade":
        command.upgrade(config, revision)
    else:
        command.downgrade(config, revision)
