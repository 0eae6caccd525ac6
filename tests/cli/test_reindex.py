"""`followgraph reindex`: the search index rebuilt from every user, with its progress and count."""

from __future__ import annotations

import io

from followgraph.store.graph.search import name_words
from tests.cli.clis import KEYS, Target, invoke


def test_reindex_indexes_every_user_and_says_how_many(target: Target, console: io.StringIO) -> None:
    assert invoke("demo", "--users", "40", *target.options()).exit_code == 0
    # Nothing indexed yet (demo does not serve); a stale entry that the rebuild must take out.
    assert not target.db.exists(KEYS.search_built())
    target.db.hset(KEYS.search_doc("1"), mapping={"w": "stale", "s": "0"})
    target.db.zadd(KEYS.search_prefix("stale"), {"1": 0})
    result = invoke("reindex", *target.options())
    assert result.exit_code == 0, console.getvalue()
    assert "Indexed 40 users for search." in console.getvalue()
    assert target.db.exists(KEYS.search_built())
    assert target.db.zcard(KEYS.search_prefix("stale")) == 0
    word = name_words(str(target.db.hget(KEYS.profile("1"), "name")))[0]
    assert target.db.zscore(KEYS.search_prefix(word[:2]), "1") is not None
