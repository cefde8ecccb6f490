"""Initial schema: blobs, artifacts, manifests, checkpoints, receipts.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from artifacts.tables import BigId, UTCDateTime

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None

_ID = sa.String(255)
_HASH = sa.String(71)


def _scope() -> list[sa.Column[str]]:
    return [
        sa.Column("tenant", _ID, nullable=False),
        sa.Column("project", _ID, nullable=False),
        sa.Column("task", _ID, nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "blobs",
        sa.Column("hash", _HASH, nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("hash", name="pk_blobs"),
    )
    if op.get_bind().dialect.name == "postgresql":
        # Bodies are stored uncompressed so large reads can fetch TOAST slices directly.
        op.execute("ALTER TABLE blobs ALTER COLUMN data SET STORAGE EXTERNAL")
    op.create_table(
        "artifacts",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("artifact_id", _ID, nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("parent_revision", sa.Integer(), nullable=True),
        sa.Column("content_hash", _HASH, nullable=False),
        sa.Column("writer", _ID, nullable=False),
        *_scope(),
        sa.Column("trust", sa.String(64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("media_type", _ID, nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_artifacts"),
        sa.ForeignKeyConstraint(
            ["content_hash"], ["blobs.hash"],
            name="fk_artifacts_content_hash_blobs", ondelete="RESTRICT",
        ),
        sa.UniqueConstraint(
            "kind", "artifact_id", "revision", name="uq_artifacts_kind_artifact_id_revision"
        ),
    )
    op.create_index("ix_artifacts_content_hash", "artifacts", ["content_hash"])
    op.create_index("ix_artifacts_tenant_project", "artifacts", ["tenant", "project"])
    op.create_table(
        "manifests",
        sa.Column("manifest_id", _ID, nullable=False),
        sa.Column("run_id", _ID, nullable=False),
        sa.Column("step_id", _ID, nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        *_scope(),
        sa.Column("policy_id", _ID, nullable=True),
        sa.Column("policy_revision", sa.String(64), nullable=True),
        sa.Column("policy_digest", _HASH, nullable=True),
        sa.Column("serialized_input_hash", _HASH, nullable=True),
        sa.Column("actual_input_tokens", sa.Integer(), nullable=True),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("body_hash", _HASH, nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("manifest_id", name="pk_manifests"),
    )
    op.create_index("ix_manifests_run_id_step_id", "manifests", ["run_id", "step_id"])
    op.create_table(
        "checkpoints",
        sa.Column("seq", BigId, autoincrement=True, nullable=False),
        sa.Column("checkpoint_id", _ID, nullable=False),
        sa.Column("run_id", _ID, nullable=False),
        sa.Column("step_id", _ID, nullable=False),
        *_scope(),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("body_hash", _HASH, nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_checkpoints"),
        sa.UniqueConstraint("checkpoint_id", name="uq_checkpoints_checkpoint_id"),
    )
    op.create_index("ix_checkpoints_run_id_seq", "checkpoints", ["run_id", "seq"])
    op.create_table(
        "receipts",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("receipt_key", _ID, nullable=False),
        *_scope(),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("body_hash", _HASH, nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_receipts"),
        sa.UniqueConstraint("receipt_key", name="uq_receipts_receipt_key"),
    )


def downgrade() -> None:
    op.drop_table("receipts")
    op.drop_index("ix_checkpoints_run_id_seq", table_name="checkpoints")
    op.drop_table("checkpoints")
    op.drop_index("ix_manifests_run_id_step_id", table_name="manifests")
    op.drop_table("manifests")
    op.drop_index("ix_artifacts_tenant_project", table_name="artifacts")
    op.drop_index("ix_artifacts_content_hash", table_name="artifacts")
    op.drop_table("artifacts")
    op.drop_table("blobs")
