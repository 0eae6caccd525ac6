"""Alembic's environment and the schema's revisions (shipped in the package, run by `migrate`)."""
