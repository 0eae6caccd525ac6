"""The follow graph on Redis as one object: every operation of the store is a method of FollowStore.

The operations are written by concern in mixins, as redis-py writes its commands: reads
(store/graph/reads.py), users and follows (follows.py), social controls (controls.py),
suggestions (suggestions.py), search (search.py) and its index (search_index.py), accounts
switched off, on and deleted (lifecycle.py), all on the
client, keys and read channel of StoreBase (base.py).
Maintenance jobs over the whole graph (bulk loading and scans: bulk.py; verify and repair:
repair.py) are module functions that take a store.
"""

from __future__ import annotations

from followgraph.store.graph.controls import ControlOps
from followgraph.store.graph.follows import FollowOps
from followgraph.store.graph.lifecycle import LifecycleOps
from followgraph.store.graph.search import SearchOps
from followgraph.store.graph.suggestions import SuggestionOps


class FollowStore(FollowOps, ControlOps, SuggestionOps, SearchOps, LifecycleOps):
    """Async access to the follow graph. The client must be created with decode_responses=True."""
