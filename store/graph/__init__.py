"""The graph core: key names, Lua scripts, the store's operations (follows, reads, controls,
suggestions), cursors and paging, bulk loading and repair. It talks to Redis through
followgraph.store.redis and knows nothing of the change log's readers or of SQL.
"""
