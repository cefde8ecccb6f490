"""Migration scripts, one per schema revision, applied in order by Alembic."""
