"""Alembic's environment: migrations run on the connection `migrate` passes in, never from an ini."""

from __future__ import annotations

from alembic import context

from followgraph.store.sql.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run the migrations through followgraph.store.sql.migrate(url)")
context.configure(connection=connection, target_metadata=metadata)
with context.begin_transaction():
    context.run_migrations()
