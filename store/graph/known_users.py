"""What an import's batches learnt of its users (store/graph/imports.py): which follows of a batch
are plain, and which of those need no look for the follow back.

A plain follow has a time, and users known as registered with no blocks or requests, or not known
yet (the batch learns those first). The script believes what the import knows only while the log's
last event is the one the import saw, or the import's own batch right after it
(lua/import_follows.lua).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain


@dataclass(frozen=True, slots=True)
class Follows:
    """A batch's follows, split once from the flat list import_batch takes (follower, followee,
    time of each; time '' for now)."""

    followers: Sequence[str]
    followees: Sequence[str]
    pairs: list[tuple[str, str]]
    times: Sequence[str]
    # Whether one has no time: it may make a request (a user's letter changes) or take now's time.
    timeless: bool

    @classmethod
    def of(cls, edges: Sequence[str]) -> Follows:
        followers, followees, times = edges[0::3], edges[1::3], edges[2::3]
        return cls(followers, followees, list(zip(followers, followees, strict=True)), times, "" in times)


class KnownUsers:
    """What an import's batches learnt of its users, a letter each (lua/parts/import_users.lua
    `letter_of`), and the id of the log's last event when they learnt it; at most `limit` users (some
    100 bytes each), the first learnt forgotten first."""

    def __init__(self, limit: int = 2_000_000, sent_limit: int = 4_000_000) -> None:
        self.letters: dict[str, str] = {}
        # The users among them whose letter is not '0': few, so a batch without any of them is
        # told from the others by two set lookups rather than one a follow.
        self.odd: set[str] = set()
        # The users the import registered (letter 'n'), and a hash of each follow it sent since
        # the first of them (some 60 bytes each, up to `sent_limit`; then both start again): their
        # follows are only those, as no other write gives a new user a follow without an event.
        self.fresh: set[str] = set()
        self.sent: set[int] = set()
        self.at = ""
        # Names the import's batches in their events: a batch sent before the answer to the one
        # before finds that one's event last in the log, and believes what it knows when that
        # event came right after `at`; it learns the users that batch registered from the event.
        self.run = secrets.token_hex(8)
        # Whether the import began on a database that held no key at all, as its first answer
        # said (None until then): while nothing else writes and no user is forgotten, a user the
        # import has not named yet was never seen, and is registered without a look.
        self.empty: bool | None = None
        self.limit = limit
        self.sent_limit = sent_limit

    @property
    def unseen(self) -> str:
        """What a batch tells the script of the users this does not know (lua/import_follows.lua):
        '?' ask whether the database is empty, '1' they were never seen, '' nothing."""
        if self.empty is None:
            return "?"
        return "1" if self.empty else ""

    def plain(self, follows: Follows) -> tuple[list[bool], list[str]]:
        """Which of `follows` are plain: a time given, both users known as registered with no blocks
        or requests or not known yet, and neither named by a follow of the batch without a time
        (which may make a request or take the time of now: the order of the two then matters). Then
        the users they name that this does not know."""
        letters, odd, pairs = self.letters, self.odd, follows.pairs
        if follows.timeless:
            odd = odd | {
                user for pair, at in zip(pairs, follows.times, strict=True) if at == "" for user in pair
            }
        if odd.isdisjoint(follows.followers) and odd.isdisjoint(follows.followees):
            plain = [True] * len(pairs)
            named = dict.fromkeys(chain.from_iterable(pairs))
        else:
            plain = [a not in odd and b not in odd for a, b in pairs]
            named = dict.fromkeys(user for pair, p in zip(pairs, plain, strict=True) if p for user in pair)
        return plain, [user for user in named if user not in letters]

    def no_back(self, follows: Follows, plain: list[bool]) -> str:
        """A letter for each plain one of `follows` (`plain` as plain() told), where no follow the
        import sent (this batch's included) is the follow back: '0' when its followee is a user the
        import registered, '2' when it is a user the import does not know (the script then looks
        only at a user it did not see registered by this batch or the one before); else '1', the
        script looks. The batch's follows are kept as sent."""
        followers, followees = follows.followers, follows.followees
        batch = set(map(hash, follows.pairs))
        fresh, sent, known = self.fresh, self.sent, self.letters
        backs = map(hash, zip(followees, followers, strict=True))
        letters = "".join(
            [
                "1" if h in sent or h in batch else "0" if b in fresh else "1" if b in known else "2"
                for b, h, p in zip(followees, backs, plain, strict=True)
                if p
            ]
        )
        if len(sent) + len(batch) > self.sent_limit:
            # Past the limit both start again: users registered from now on are known anew, and the
            # run takes a new name, so that no later batch learns from an earlier one's event users
            # whose follows are no longer kept as sent.
            fresh.clear()
            sent.clear()
            self.run = secrets.token_hex(8)
        sent.update(batch)
        return letters

    def learnt(self, before: str, after: str, users: str, letters: str, *, found_empty: bool = False) -> None:
        """What a batch answered: the log's last event id before it and after it, the users it
        learnt with their letters at its end ('n': registered by the batch, kept as '0'), and
        whether it found the database empty (the first answer tells `empty`). When another write
        came before the batch, all the import knew may be stale and is forgotten, and a user it has
        not named may have been registered."""
        if self.empty is None:
            self.empty = found_empty
        if before != self.at:
            self.empty = False
            self.letters.clear()
            self.odd.clear()
            # A user the import registered may have been given a follow by that write. What the import
            # sent stays true, and a user this batch registered has followed only whom it sent.
            self.fresh.clear()
        self.at = after
        if users:
            names = users.split(" ")
            fresh = self.fresh
            if fresh and letters.count("0") + letters.count("n") < len(letters):
                # With blocks or requests now (a request the import made), or unknown: no longer
                # vouched for. Learnt again without (by a batch sent before the answer that
                # registered them), a user still follows only whom the import sent.
                fresh.difference_update(
                    [name for name, letter in zip(names, letters, strict=True) if letter in "1u"]
                )
            if "n" in letters:
                fresh.update([name for name, letter in zip(names, letters, strict=True) if letter == "n"])
                letters = letters.replace("n", "0")
            told = list(zip(names, letters, strict=True))
            self.letters.update(told)
            odd = self.odd
            if odd:
                odd.difference_update([name for name, letter in told if letter == "0"])
            if letters.count("0") < len(letters):
                odd.update([name for name, letter in told if letter != "0"])
        for _ in range(len(self.letters) - self.limit):
            self.empty = False  # a user forgotten could be taken for one never seen
            first = next(iter(self.letters))
            del self.letters[first]
            self.odd.discard(first)
            self.fresh.discard(first)
