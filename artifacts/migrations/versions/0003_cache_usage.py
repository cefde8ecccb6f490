"""Prompt-cache usage: what the provider read from and wrote to its cache, per manifest.

Recorded once after the call beside ``actual_input_tokens`` (both parts of it; see
docs/context-engine.md#prompt-cache-identity). NULL for manifests recorded before this
migration, and for providers that reported no cache figures.

Revision ID: 0003_cache_usage
Revises: 0002_attestation
Create Date: 2026-12-20
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_cache_usage"
down_revision = "0002_attestation"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("manifests", sa.Column("cached_input_tokens", sa.Integer(), nullable=True))
    op.add_column("manifests", sa.Column("cache_write_input_tokens", sa.Integer(),
                                         nullable=True))


def downgrade() -> None:
    op.drop_column("manifests", "cache_write_input_tokens")
    op.drop_column("manifests", "cached_input_tokens")
