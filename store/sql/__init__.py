"""The durable SQL copy of the follow graph (PostgreSQL, MySQL/MariaDB, SQLite), fed by the event log.

A consumer reads batches of events (followgraph.store.graph.events) and hands them to
`apply.apply_events`; `migrate.migrate` creates the tables; the snapshot reads (`snapshot`) give
the copy back for a rebuild or a reconcile; `urls` turns the URLs users write into SQLAlchemy's.

Each is imported from its own module: the package itself imports nothing, so that what needs only
a URL's checks (the settings, the command line) does not load SQLAlchemy and Alembic.
"""
