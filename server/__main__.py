"""`python -m server` is the followgraph command."""

from server.cli import main

main()
