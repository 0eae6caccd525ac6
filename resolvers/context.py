"""The per-request context every resolver receives."""

from __future__ import annotations

from dataclasses import dataclass, field

from followgraph.dataloaders import BatchObserver, DataLoaders
from followgraph.resolvers.paging import MAX_PAGE_SIZE
from followgraph.store import FollowStore
from followgraph.store.graph.ratelimit import FollowLimit
from followgraph.store.log.hub import EventHub

ADMIN_SCOPE = "admin"


@dataclass(slots=True)
class Context:
    store: FollowStore
    viewer_id: str | None = None
    scopes: frozenset[str] = field(default_factory=frozenset)
    request_id: str = "-"
    # The follow rate limit; None when it is off.
    follow_limit: FollowLimit | None = None
    # The operation that ran, once the document is parsed (for logs and metrics).
    operation_name: str | None = None
    # The largest first/last of a connection (the schema's QueryLimits.max_page_size).
    max_page_size: int = MAX_PAGE_SIZE
    # The process's dispatcher of live events (subscriptions over WebSocket only).
    hub: EventHub | None = None
    # connection_init's payload over WebSocket (Strawberry sets it), where the token travels.
    connection_params: dict[str, object] | None = None
    # When (event loop time) the request is cancelled, for work that can answer early and run on;
    # None without a deadline.
    deadline: float | None = None
    # Told the size of each batch the request's DataLoaders load.
    observe: BatchObserver | None = None
    # Made when first used: a compiled plan whose reads follow one another uses none.
    _loaders: DataLoaders | None = field(default=None, repr=False)

    @property
    def loaders(self) -> DataLoaders:
        """The request's DataLoaders, which batch the store's reads of fields run side by side."""
        loaders = self._loaders
        if loaders is None:
            loaders = self._loaders = DataLoaders(self.store, self.viewer_id, self.observe)
        return loaders

    def forget_loaders(self) -> None:
        """Make the DataLoaders anew when next used: for another viewer, or an operation that must
        read what is stored now rather than what an earlier one loaded."""
        self._loaders = None

    @classmethod
    def create(
        cls,
        store: FollowStore,
        *,
        viewer_id: str | None = None,
        scopes: frozenset[str] = frozenset(),
        request_id: str = "-",
        observe: BatchObserver | None = None,
        follow_limit: FollowLimit | None = None,
        max_page_size: int = MAX_PAGE_SIZE,
        deadline: float | None = None,
    ) -> Context:
        return cls(
            store,
            viewer_id,
            scopes,
            request_id,
            follow_limit,
            max_page_size=max_page_size,
            deadline=deadline,
            observe=observe,
        )

    @property
    def is_admin(self) -> bool:
        return ADMIN_SCOPE in self.scopes
