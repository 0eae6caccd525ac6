"""The HTTP and WebSocket transport: the /graphql endpoint over HTTP and its protocol guards,
subscriptions over WebSocket, authentication, deadlines, metrics, logs of requests and the web
assets. It runs operations through followgraph.executor and knows nothing of processes, settings
files or the command line; it may import executor, schema, resolvers and store, never server or cli.
"""
