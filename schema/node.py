"""The Relay Node interface."""

import strawberry


@strawberry.interface(description="Relay Global Object Identification.")
class Node:
    id: strawberry.ID = strawberry.field(
        description="Globally unique, opaque id; `node(id:)` fetches it back."
    )
