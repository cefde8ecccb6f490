"""Signed revisions: the attestation key id and HMAC of each artifact revision.

Both columns are NULL for revisions written without an attestation key (every revision
before this migration); see ``artifacts.attestation``.

Revision ID: 0002_attestation
Revises: 0001_initial
Create Date: 2026-12-14
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_attestation"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("artifacts", sa.Column("attestation_key_id", sa.String(64), nullable=True))
    op.add_column("artifacts", sa.Column("attestation_mac", sa.String(64), nullable=True))


def downgrade() -> None:
    # SQLite (3.35+) and PostgreSQL both drop a plain column in place.
    op.drop_column("artifacts", "attestation_mac")
    op.drop_column("artifacts", "attestation_key_id")
