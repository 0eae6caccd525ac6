"""People the viewer may know (可能认识的人): friends of friends, ranked by how many of the users
the viewer follows follow them.

The cost is bounded whatever the graph: the viewer's SAMPLE_FOLLOWING most recent follows are
read, and FANOUT most recent follows of each of them, so at most SAMPLE_FOLLOWING x FANOUT
candidates are counted, in three round trips: the viewer's follows; theirs (one pipeline, split
per node on a cluster), with whether each shows whom they follow to the viewer (a user who hides
it is no source of suggestions); then the viewer's own sets for the exclusions (one script on the
viewer's slot). Reads only.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import cast

from followgraph.store.graph import scripts
from followgraph.store.graph.ids import validate_user_id
from followgraph.store.graph.reads import ReadOps
from followgraph.store.redis.lua import AnyPipeline, run_pipeline

SAMPLE_FOLLOWING = 50
FANOUT = 100
MAX_SUGGESTIONS = 50


@dataclass(frozen=True, slots=True)
class Suggestion:
    user_id: str
    # How many of the sampled users the viewer follows follow this user.
    followed_by_count: int
    # Those users, the one the viewer followed most recently first.
    followed_by: list[str]


class SuggestionOps(ReadOps):
    """People the viewer may know, as an operation of the store."""

    async def suggestions(self, viewer: str, *, first: int = 10) -> list[Suggestion]:
        """Up to `first` (at most MAX_SUGGESTIONS) users the viewer may know, best first: never the
        viewer, nobody the viewer follows or asked to follow, blocks, is blocked by or mutes."""
        validate_user_id(viewer, field="viewer")
        first = max(0, min(first, MAX_SUGGESTIONS))
        sampled = self.redis.zrevrange(self.keys.following(viewer), 0, SAMPLE_FOLLOWING - 1)
        following = cast("list[str]", await sampled)
        if not following or not first:
            return []

        def fill(pipe: AnyPipeline) -> None:
            for user_id in following:
                owner = [self.keys.profile(user_id), self.keys.fans(user_id), self.keys.blocking(user_id)]
                scripts.HIDDEN_SCRIPT.queue(pipe, owner, [viewer, "hideFollowing"])
                pipe.zrevrange(self.keys.following(user_id), 0, FANOUT - 1)

        replies = await run_pipeline(self.redis, fill, [scripts.HIDDEN_SCRIPT])
        # Candidate -> the viewer's follows who follow them, in the viewer's order (most recent first).
        via: dict[str, list[str]] = defaultdict(list)
        for user_id, hidden, followed in zip(following, replies[::2], replies[1::2], strict=True):
            if hidden:
                continue
            for candidate in followed:
                if candidate != viewer:
                    via[candidate].append(user_id)
        if not via:
            return []
        candidates = list(via)
        k = self.keys
        own = [k.following(viewer), k.requests_out(viewer), k.blocking(viewer), k.blocked_by(viewer)]
        own.append(k.muting(viewer))
        excluded = await scripts.CONTROLS_SCRIPT.run(self.redis, own, candidates)
        kept = [c for c, *scores in zip(candidates, *excluded, strict=True) if all(s is None for s in scores)]
        recent = {user_id: rank for rank, user_id in enumerate(following)}
        kept.sort(key=lambda c: (-len(via[c]), recent[via[c][0]], c))
        return [Suggestion(c, len(via[c]), via[c]) for c in kept[:first]]
