"""The compiled executor: known documents compiled once into plans that answer without graphql-core
(reads and the common mutations), with Strawberry's executor (followgraph.schema) for the rest.
It may import schema, resolvers and store; the transport calls it through execute.Executor.
"""
