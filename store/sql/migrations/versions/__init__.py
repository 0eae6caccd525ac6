"""The schema's revisions, oldest first (a package so that wheels ship it)."""
