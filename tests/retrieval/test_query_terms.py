"""A pasted wall of text as a search query: only its first unique content words reach FTS5."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memdesk.core.base.clock import ManualClock
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.archival import ArchivalMemory
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.retrieval.message_parts import PartIndex
from memdesk.core.retrieval.query import MAX_QUERY_TERMS, fts_query, terms

#: 20,000 words, nearly all different: the query a user pasting a long document would search with.
HUGE_QUERY = "lighthouse " + " ".join(f"word{n}" for n in range(20_000))


@pytest.fixture
def fts_matches(db, monkeypatch):
    """The MATCH expressions the store (or the index of long messages' parts) is asked for, as
    lists of their OR-ed terms."""
    seen: list[list[str]] = []
    real_query = db.query
    real_parts = PartIndex.best_parts

    def parts_spy(index, agent_id, phrases):
        seen.append(list(phrases))
        return real_parts(index, agent_id, phrases)

    monkeypatch.setattr(PartIndex, "best_parts", parts_spy)

    def spy(sql, params=()):
        if "MATCH" in sql:
            seen.append(params[0].split(" OR "))
        return real_query(sql, params)

    monkeypatch.setattr(db, "query", spy)
    return seen


def test_a_query_keeps_its_first_unique_content_words_up_to_the_cap():
    assert terms("The lighthouse, the LIGHTHOUSE and the keeper") == ["lighthouse", "keeper"]
    words = terms(HUGE_QUERY)
    assert len(words) == MAX_QUERY_TERMS
    assert words[:3] == ["lighthouse", "word0", "word1"]
    assert len(fts_query(HUGE_QUERY).split(" OR ")) == MAX_QUERY_TERMS
    only_stop_words = " ".join(["the", "a", "of", "and", "to", "in"] * 5000)
    assert 0 < len(fts_query(only_stop_words).split(" OR ")) <= MAX_QUERY_TERMS


def test_a_20000_word_conversation_search_sends_capped_terms_and_still_finds(db, fts_matches):
    recall = RecallMemory(db, HashingEmbedder())
    when = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    target = recall.add(
        1,
        role="user",
        kind="user_message",
        content="We visited the lighthouse on the cape",
        search_text="We visited the lighthouse on the cape",
        created_at=when,
    )
    recall.add(
        1,
        role="user",
        kind="user_message",
        content="Groceries: bread and milk",
        search_text="Groceries: bread and milk",
        created_at=when,
    )
    page = recall.search_text(1, HUGE_QUERY)
    assert fts_matches and all(len(match) <= MAX_QUERY_TERMS for match in fts_matches)
    assert page.hits[0].id == target.id


def test_a_20000_word_archival_search_sends_capped_terms_and_still_finds(db, fts_matches):
    archival = ArchivalMemory(db, HashingEmbedder(), ManualClock())
    archival.insert(1, "The lighthouse keeper's log from 1910.")
    archival.insert(1, "A recipe for plum cake.")
    hits = archival.search(1, HUGE_QUERY).hits
    assert fts_matches and all(len(match) <= MAX_QUERY_TERMS for match in fts_matches)
    assert hits[0].passage.text.startswith("The lighthouse")
