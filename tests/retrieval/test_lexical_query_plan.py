"""Full-text search reads the index first on both SQLite builds: sqlean's (plain stores) and
SQLCipher's (encrypted ones), whose newer planner would otherwise run the match once per message."""

from __future__ import annotations

import pytest

from desktop.core.retrieval.messages import LEXICAL_SQL as MESSAGES_SQL
from desktop.core.retrieval.passages import LEXICAL_SQL as PASSAGES_SQL
from desktop.core.storage import open_database


@pytest.mark.parametrize("key", [None, "secret"], ids=["plain", "encrypted"])
@pytest.mark.parametrize(("sql", "index"), [(MESSAGES_SQL, "messages_fts"), (PASSAGES_SQL, "passages_fts")], ids=["messages", "passages"])
def test_the_lexical_search_starts_from_the_full_text_index(tmp_path, key, sql, index):
    db = open_database(tmp_path / "memdesk.sqlite3", key=key)
    try:
        plan = [row[3] for row in db.query(f"EXPLAIN QUERY PLAN {sql}", ("garden", 1, 10))]
    finally:
        db.close()
    assert plan[0].startswith("SCAN f VIRTUAL TABLE"), plan
