"""`python -m server` is the followgraph command."""

from followgraph.server.cli import main

main()
