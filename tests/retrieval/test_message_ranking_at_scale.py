"""conversation_search keeps its answers while doing less work on long conversations: the timeline
grows by the new messages only, the verbatim pass leaves nothing out in any script."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from desktop.core.embedding.hashing import HashingEmbedder
from desktop.core.memory.recall import RecallMemory
from desktop.core.retrieval import MessageRanker, VectorIndex
from desktop.core.retrieval import messages as message_ranking

START = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)


def _say(recall, text, minutes, author="Ana"):
    return recall.add(1, role="user", kind="user_message", content=text, search_text=text, author=author, created_at=START + timedelta(minutes=minutes)).id


def _ranking(recall, query):
    return [(hit.id, round(hit.score, 6), hit.exact) for hit in recall.rank(1, query)]


def test_a_new_message_is_read_alone_and_the_ranking_equals_a_fresh_read(db, monkeypatch):
    embedder = HashingEmbedder()
    recall = RecallMemory(db, embedder, ranker=MessageRanker(db, embedder, VectorIndex(db)))
    for n in range(60):
        _say(recall, f"turn {n} about {'owls' if n % 7 == 0 else 'bread'} and the garden", n, author="Ana" if n % 2 else "Ben")
    recall.rank(1, "owls")
    read = []
    original = message_ranking._timeline_rows
    monkeypatch.setattr(message_ranking, "_timeline_rows", lambda rows, speaker: read.append(len(rows)) or original(rows, speaker))
    _say(recall, "owls again, late at night", 60, author="Cleo")  # a new speaker too
    _say(recall, "owls in the morning", 60 * 24 * 3)  # a new session
    incremental = _ranking(recall, "owls")
    assert read == [2]
    fresh = RecallMemory(db, embedder, ranker=MessageRanker(db, embedder, VectorIndex(db)))
    assert incremental == _ranking(fresh, "owls")
    assert _ranking(recall, "what did Cleo say") == _ranking(fresh, "what did Cleo say")


def test_an_edit_or_a_deletion_reads_the_timeline_again(db):
    embedder = HashingEmbedder()
    recall = RecallMemory(db, embedder, ranker=MessageRanker(db, embedder, VectorIndex(db)))
    ids = [_say(recall, f"note {n} on tomatoes", n) for n in range(10)]
    assert ids[3] in [hit.id for hit in recall.rank(1, "tomatoes")]
    db.execute("DELETE FROM messages WHERE id = ?", (ids[3],))
    _say(recall, "tomatoes, finally ripe", 20)  # as many messages as before: counts alone would not tell
    assert ids[3] not in [hit.id for hit in recall.rank(1, "tomatoes")]


def test_verbatim_matches_are_found_in_every_script_and_case(db):
    recall = RecallMemory(db, HashingEmbedder())
    street = _say(recall, "We met on the Hauptstraße in Köln", 0)
    kelvin = _say(recall, "It was 300 \u212a outside", 1)  # the Kelvin sign casefolds to an ASCII k
    plain = _say(recall, "The HAUPTSTRASSE was closed", 2)
    _say(recall, "nothing to see", 3)
    exact = {hit.id for hit in recall.rank(1, "hauptstrasse") if hit.exact}
    assert exact == {street, plain}
    assert {hit.id for hit in recall.rank(1, "300 k") if hit.exact} == {kelvin}
