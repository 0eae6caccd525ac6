"""Finding people by name or id (searchUsers): how names and queries are read, and how a query
reads the index.

A query's words each match the start of a word of a name, case and accents aside ("jose" finds
"José Núñez", "nu" too); a one-word query also matches a user id whole, case aside. Names are
folded before they are split: decomposed (NFKD), combining marks dropped, case folded. Words are
runs of letters and digits; in a run of CJK ideographs or kana, which are written without spaces,
every character starts a word ("静" finds "徐静"). Only a word's first MAX_PREFIX characters count.

The index (kept by store/graph/search_index.py from the change log) holds, for each prefix of each
word of each name, a sorted set of the users with such a word, scored by their fans count. A query
reads the set of its longest word (the fewest users) for its CANDIDATES best-scored members, and,
in a second round trip, checks them against the query's other words (ZMSCORE on their sets) and
against the viewer's follows and blocks (ZMSCORE on the viewer's sets): two round trips whatever
the page size, reads only. The viewer's follows come first, then the most followed; blocks either
way are left out. The index ranks by fans as last indexed (within a sixteenth of the count) and
may lag the graph by the indexer's delay; the resolver checks each user of a page against its
current name before answering (`matches`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

from followgraph.store.graph.base import StoreBase
from followgraph.store.graph.errors import InvalidInputError
from followgraph.store.graph.ids import validate_user_id
from followgraph.store.redis.lua import AnyPipeline, run_pipeline

# The characters of a word that count: a longer word is indexed, and looked up, by its start.
MAX_PREFIX = 20
# Words of a name that are indexed (the first ones), and of a query that are read.
MAX_NAME_WORDS = 12
MAX_QUERY_WORDS = 5
MAX_QUERY_LENGTH = 100
# The best-scored users of the query's longest word that are ranked: the cost of a query is bounded
# by it, whatever the number of users matching a short prefix.
CANDIDATES = 1000
MAX_RESULTS = 50

# Letters and digits, without the underscore that \w includes.
_WORD = re.compile(r"[^\W_]+")
# Scripts written without spaces between words: each character starts a word.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff]")


def fold(text: str) -> str:
    """`text` without accents, case folded: what names and queries are compared as."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def query_words(query: str) -> list[str]:
    """The folded words of a query (each cut to MAX_PREFIX characters), without repeats, in order."""
    return list(dict.fromkeys(word[:MAX_PREFIX] for word in _WORD.findall(fold(query))))


def name_words(name: str) -> list[str]:
    """The folded words a name is found by, cut to MAX_PREFIX characters: its words, and within a
    run of CJK or kana every character's rest of the run. At most MAX_NAME_WORDS."""
    words: list[str] = []
    for word in _WORD.findall(fold(name)):
        words.append(word)
        words += [word[i:] for i in range(1, len(word)) if _UNSPACED.match(word, i)]
    return list(dict.fromkeys(word[:MAX_PREFIX] for word in words))[:MAX_NAME_WORDS]


def prefixes(words: Sequence[str]) -> set[str]:
    """Every prefix of every word: the index's sets a name is in."""
    return {word[:end] for word in words for end in range(1, len(word) + 1)}


class Query(NamedTuple):
    """What a query looks for: its words (query_words), and the id it names whole, folded, when it
    could be one."""

    words: list[str]
    whole_id: str | None

    @classmethod
    def of(cls, text: str) -> Query:
        stripped = text.strip()
        return cls(query_words(stripped), fold(stripped) if _is_user_id(stripped) else None)

    def matches(self, user_id: str, name: str | None) -> bool:
        """Whether a user with this id and name answers the query."""
        if self.whole_id is not None and fold(user_id) == self.whole_id:
            return True
        own = name_words(name or "")
        return bool(self.words) and all(any(w.startswith(word) for w in own) for word in self.words)


class Found(NamedTuple):
    """One page of a search: the users, best first, and whether more follow."""

    user_ids: list[str]
    has_next: bool


class SearchOps(StoreBase):
    """searchUsers, as an operation of the store."""

    async def search_users(self, viewer: str | None, query: Query, *, first: int, offset: int) -> Found:
        """Users matching `query`, ranked as the module says, from `offset` on: at most `first` of
        them, and whether more follow. Two round trips."""
        if viewer is not None:
            validate_user_id(viewer, field="viewer")
        if not (query.words or query.whole_id) or first <= 0:
            return Found([], False)
        ordered = sorted(query.words, key=len, reverse=True)
        main, others = (ordered[0], ordered[1:]) if ordered else (None, [])
        k = self.keys

        def candidates(pipe: AnyPipeline) -> None:
            if main is not None:
                pipe.zrevrange(k.search_prefix(main), 0, CANDIDATES - 1, withscores=True)
            if query.whole_id is not None:
                pipe.zrevrange(k.search_id(query.whole_id), 0, CANDIDATES - 1, withscores=True)

        replies = await run_pipeline(self.redis, candidates)
        # Users found by their id need not match the words ("jing_xu" is two words of a name).
        by_id: dict[str, float] = dict(replies[-1]) if query.whole_id is not None else {}
        scores = dict(cast("list[tuple[str, float]]", replies[0])) if main is not None else {}
        scores.update(by_id)
        if not scores:
            return Found([], False)
        ids = list(scores)
        checks = [k.search_prefix(word) for word in others]
        if viewer is not None:
            checks += [k.following(viewer), k.blocking(viewer), k.blocked_by(viewer)]

        def membership(pipe: AnyPipeline) -> None:
            for key in checks:
                pipe.zmscore(key, ids)

        replies = await run_pipeline(self.redis, membership) if checks else []
        word_replies = replies[: len(others)]
        followed: list[Any] = replies[len(others)] if viewer is not None else [None] * len(ids)
        blocked = replies[len(others) + 1 :]
        ranked = []
        for i, user_id in enumerate(ids):
            if user_id not in by_id and any(reply[i] is None for reply in word_replies):
                continue
            if any(reply[i] is not None for reply in blocked):
                continue
            ranked.append((followed[i] is None, -scores[user_id], user_id))
        ranked.sort()
        page = [user_id for _, _, user_id in ranked[offset : offset + first]]
        return Found(page, len(ranked) > offset + first)


def _is_user_id(text: str) -> bool:
    try:
        validate_user_id(text)
    except InvalidInputError:
        return False
    return True
