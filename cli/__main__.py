"""`python -m followgraph.cli` is the followgraph command."""

from followgraph.cli.main import main

main()
