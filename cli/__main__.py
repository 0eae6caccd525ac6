"""`python -m server` is the followgraph command."""

from followgraph.cli.main import main

main()
