"""`python -m bench.nolog_server serve ...`: `followgraph serve` whose FOLLOW and UNFOLLOW scripts do
not write the change log (their sources with `log_event` a no-op, bench.eventlog.without_log).

The reference of the event log's section (bench/eventlog.py): the same server, the same load, the
log's XADD taken out. One process only (the default, FOLLOWGRAPH_WORKERS=1): workers started
apart would import the scripts unchanged.
"""

from __future__ import annotations

from bench.eventlog import scripts_without_log
from followgraph.cli.main import main

if __name__ == "__main__":
    with scripts_without_log():
        main()
