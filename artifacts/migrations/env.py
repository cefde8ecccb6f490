"""Alembic environment: runs migrations on the connection ``artifacts.migrate`` passes in.

The caller owns the (async) engine and the transaction, so a migration run is one
transaction, serialized against concurrent runs by the dialect's migration lock.
"""

from __future__ import annotations

from alembic import context

from artifacts.tables import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "artifact store migrations run through artifacts.migrate "
        "(pressroom db upgrade), which supplies the connection"
    )

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
