"""SQLAlchemy tables of the store; one definition for SQLite and PostgreSQL.

The Alembic migrations in ``artifacts/migrations`` create exactly these tables; a test
compares the migrated schema with this metadata so the two cannot drift apart.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = ["Artifact", "Base", "Blob", "Checkpoint", "Manifest", "Receipt", "UTCDateTime"]

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# Integer autoincrement ids must be BIGINT on PostgreSQL but INTEGER on SQLite (rowid alias).
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC on both engines (SQLite drops the offset; we put it back)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; use UTC-aware datetimes")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Blob(Base):
    """Content-addressed bytes, stored once however many revisions share them."""

    __tablename__ = "blobs"

    hash: Mapped[str] = mapped_column(String(71), primary_key=True)  # "sha256:" + 64 hex
    size: Mapped[int] = mapped_column(BigInteger)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class Artifact(Base):
    """One immutable revision; (kind, artifact_id, revision) is unique and arbitrates races."""

    __tablename__ = "artifacts"
    __table_args__ = (
        UniqueConstraint("kind", "artifact_id", "revision"),
        Index(None, "tenant", "project"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(64))
    artifact_id: Mapped[str] = mapped_column(String(255))
    revision: Mapped[int] = mapped_column(Integer)
    parent_revision: Mapped[int | None] = mapped_column(Integer, nullable=True)
    content_hash: Mapped[str] = mapped_column(
        String(71), ForeignKey("blobs.hash", ondelete="RESTRICT"), index=True
    )
    writer: Mapped[str] = mapped_column(String(255))
    tenant: Mapped[str] = mapped_column(String(255))
    project: Mapped[str] = mapped_column(String(255))
    task: Mapped[str] = mapped_column(String(255))
    trust: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    size: Mapped[int] = mapped_column(BigInteger)
    media_type: Mapped[str] = mapped_column(String(255))
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON)
    # The store's signature of the row (``artifacts.attestation``); NULL when written
    # without an attestation key.
    attestation_key_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    attestation_mac: Mapped[str | None] = mapped_column(String(64), nullable=True)


class Manifest(Base):
    """A sealed context-assembly manifest (docs/context-engine.md#sealing-and-the-manifest);
    only usage may be written back."""

    __tablename__ = "manifests"
    __table_args__ = (Index(None, "run_id", "step_id"),)

    manifest_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(255))
    step_id: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(32))
    tenant: Mapped[str] = mapped_column(String(255))
    project: Mapped[str] = mapped_column(String(255))
    task: Mapped[str] = mapped_column(String(255))
    policy_id: Mapped[str | None] = mapped_column(String(255), nullable=True)
    policy_revision: Mapped[str | None] = mapped_column(String(64), nullable=True)
    policy_digest: Mapped[str | None] = mapped_column(String(71), nullable=True)
    serialized_input_hash: Mapped[str | None] = mapped_column(String(71), nullable=True)
    actual_input_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cached_input_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cache_write_input_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    body_hash: Mapped[str] = mapped_column(String(71))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Checkpoint(Base):
    """A durable step checkpoint; ``seq`` orders them so 'latest' needs no clock."""

    __tablename__ = "checkpoints"
    __table_args__ = (Index(None, "run_id", "seq"),)

    seq: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    checkpoint_id: Mapped[str] = mapped_column(String(255), unique=True)
    run_id: Mapped[str] = mapped_column(String(255))
    step_id: Mapped[str] = mapped_column(String(255))
    tenant: Mapped[str] = mapped_column(String(255))
    project: Mapped[str] = mapped_column(String(255))
    task: Mapped[str] = mapped_column(String(255))
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    body_hash: Mapped[str] = mapped_column(String(71))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Receipt(Base):
    """A publish receipt; the unique key makes publishing idempotent."""

    __tablename__ = "receipts"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    receipt_key: Mapped[str] = mapped_column(String(255), unique=True)
    tenant: Mapped[str] = mapped_column(String(255))
    project: Mapped[str] = mapped_column(String(255))
    task: Mapped[str] = mapped_column(String(255))
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    body_hash: Mapped[str] = mapped_column(String(71))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
