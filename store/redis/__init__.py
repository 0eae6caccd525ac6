"""The Redis transport of the store: running Lua scripts by SHA, the auto-pipelined read channels
(one Redis, or one connection per cluster master) and the client-side cache of profiles. It knows
no key of the graph; it imports nothing else of followgraph.
"""
