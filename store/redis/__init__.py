"""The Redis transport of the store: running Lua scripts by SHA, the auto-pipelined read channels
(one Redis, or one connection per cluster master), the client-side cache of profiles, the spans
of round trips when tracing is on, and writes that wait for replicas. It knows no key of the
graph; it imports nothing else of followgraph.
"""
