"""The `followgraph` command line: serve, token, demo, import and export, verify and repair, and the
change log and SQL copy commands. The top of the import graph: it may import every other package,
and none imports it.
"""
