"""Full-text search reads the index first on both SQLite builds: sqlean's (plain stores) and
SQLCipher's (encrypted ones), whose newer planner would otherwise run the match once per message."""

from __future__ import annotations

import pytest

from memdesk.core.retrieval.messages import LEXICAL_INDEX as MESSAGES_INDEX
from memdesk.core.retrieval.passages import LEXICAL_INDEX as PASSAGES_INDEX
from memdesk.core.storage import open_database

#: Every statement the bounded lexical leg scores with (memdesk.core.retrieval.bounded_fts).
STATEMENTS = [
    pytest.param(lambda index: (index.scored(), ("garden", 1, 10)), id="best"),
    pytest.param(lambda index: (index.scored(limit=False), ("garden", 1)), id="candidates"),
    pytest.param(lambda index: (index.scored(" AND f.rowid >= ?"), ("garden", 1, 500, 10)), id="newest"),
]


@pytest.mark.parametrize("key", [None, "secret"], ids=["plain", "encrypted"])
@pytest.mark.parametrize("index", [MESSAGES_INDEX, PASSAGES_INDEX], ids=["messages", "passages"])
@pytest.mark.parametrize("statement", STATEMENTS)
def test_the_lexical_search_starts_from_the_full_text_index(tmp_path, key, index, statement):
    sql, params = statement(index)
    db = open_database(tmp_path / "memdesk.sqlite3", key=key)
    try:
        plan = [row[3] for row in db.query(f"EXPLAIN QUERY PLAN {sql}", params)]
    finally:
        db.close()
    assert plan[0].startswith("SCAN f VIRTUAL TABLE"), plan
