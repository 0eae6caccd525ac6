"""The change log: its events, reading and trimming the Redis streams, consumer groups, and the
per-process hub that fans events out to subscriptions. The SQL copy (followgraph.store.sql) is one
of its consumers. It may import the graph core and the Redis transport.
"""
