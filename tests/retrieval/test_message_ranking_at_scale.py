"""conversation_search keeps its answers while doing less work on long conversations: the timeline
grows by the new messages only, the verbatim pass leaves nothing out in any script."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import numpy as np

from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.retrieval import MessageRanker, VectorIndex, folded_texts
from memdesk.core.retrieval import messages as message_ranking
from memdesk.core.retrieval import timeline as timelines
from memdesk.core.retrieval.folded_texts import FoldedTexts

START = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def _say(recall, text, minutes, author="Ana"):
    return recall.add(
        1,
        role="user",
        kind="user_message",
        content=text,
        search_text=text,
        author=author,
        created_at=START + timedelta(minutes=minutes),
    ).id


def _ranking(recall, query):
    return [(hit.id, round(hit.score, 6), hit.exact) for hit in recall.rank(1, query)]


def test_a_new_message_is_read_alone_and_the_ranking_equals_a_fresh_read(db, monkeypatch):
    embedder = HashingEmbedder()
    recall = RecallMemory(db, embedder, ranker=MessageRanker(db, embedder, VectorIndex(db)))
    for n in range(60):
        _say(
            recall,
            f"turn {n} about {'owls' if n % 7 == 0 else 'bread'} and the garden",
            n,
            author="Ana" if n % 2 else "Ben",
        )
    recall.rank(1, "owls")
    read = []
    original = timelines._timeline_rows
    monkeypatch.setattr(
        timelines, "_timeline_rows", lambda rows, speaker: read.append(len(rows)) or original(rows, speaker)
    )
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


def test_in_a_long_conversation_verbatim_matches_come_from_the_word_index(db, monkeypatch):
    monkeypatch.setattr(message_ranking, "VERBATIM_SCAN_MAX", 5)
    monkeypatch.setattr(message_ranking, "PARTS_MAX", 5)  # too long for the in-memory texts too
    recall = RecallMemory(db, HashingEmbedder())
    target = _say(recall, "my locker code is XK-42z, don't forget", 0)
    inside = _say(recall, "the padlocker code is XK-42zz", 1)  # the query's outer words may be parts of longer ones
    for n in range(12):
        _say(recall, f"code review {n} about the locker", 2 + n)
    statements = []
    query = db.query
    monkeypatch.setattr(db, "query", lambda sql, params=(): statements.append(sql) or query(sql, params))
    exact = {hit.id for hit in recall.rank(1, "locker code is xk-42Z") if hit.exact}
    assert exact == {target, inside}
    full_scan = "FROM messages WHERE agent_id = ? AND search_text != '' AND memdesk_contains"
    assert not any(full_scan in sql for sql in statements)
    assert any("messages_fts MATCH" in sql and "memdesk_contains" in sql for sql in statements)
    statements.clear()
    assert {hit.id for hit in recall.rank(1, "XK-42") if hit.exact} == {
        target,
        inside,
    }  # no inner word: every text is compared
    assert any(full_scan in sql for sql in statements)


def test_inner_words_are_those_a_verbatim_match_must_contain_whole():
    from memdesk.core.retrieval.query import inner_words

    assert inner_words("locker code is xk-42Z") == ["code", "is", "xk"]
    assert inner_words(" locker code ") == ["locker", "code"]
    assert inner_words("owls") == [] and inner_words("snake_case words") == ["case"]


def test_cached_rankings_follow_added_removed_and_edited_rows_without_counting_them(db):
    from memdesk.core.base.clock import ManualClock
    from memdesk.core.memory.archival import ArchivalMemory, NewPassage
    from memdesk.core.retrieval import PassageRanker

    archival = ArchivalMemory(db, HashingEmbedder(), ManualClock(), ranker=PassageRanker(db, None))
    [kept, gone] = archival.add(
        1, [NewPassage("heron by the pond", START), NewPassage("heron nest in spring", START)]
    )  # words only
    assert {hit.id for hit in archival._ranker.rank(1, "heron")} == {kept, gone}
    archival.delete([gone])
    assert {hit.id for hit in archival._ranker.rank(1, "heron")} == {kept}
    db.execute("UPDATE passages SET text = 'egret by the pond' WHERE id = ?", (kept,))
    assert archival._ranker.rank(1, "heron") == []
    recall = RecallMemory(db, HashingEmbedder())
    first = _say(recall, "the heron came back", 0)
    assert [hit.id for hit in recall.rank(1, "heron")] == [first]
    db.execute("UPDATE messages SET search_text = 'the egret came back' WHERE id = ?", (first,))
    assert recall.rank(1, "heron") == []


def test_warming_reads_the_timeline_before_the_first_search(db, monkeypatch):
    embedder = HashingEmbedder()
    index = VectorIndex(db)
    recall = RecallMemory(db, embedder, ranker=MessageRanker(db, embedder, index))
    for n in range(5):
        _say(recall, f"apples number {n}", n)
    recall.index_pending(1)
    index.warm_in_background(1, recall.warm).join()
    read = []
    original = timelines._timeline_rows
    monkeypatch.setattr(
        timelines, "_timeline_rows", lambda rows, speaker: read.append(len(rows)) or original(rows, speaker)
    )
    assert len(recall.rank(1, "apples")) == 5
    assert read == []


def test_whether_anything_is_out_of_view_is_a_yes_or_no_per_agent(db):
    """Automatic recall asks it before every reply: a conversation's messages are not counted."""
    recall = RecallMemory(db, HashingEmbedder())
    first = _say(recall, "the first thing said", 0)
    second = _say(recall, "the second", 1)
    assert not recall.has_before(1, first)
    assert recall.has_before(1, second)
    assert not recall.has_before(2, second)  # another agent's messages are not its own


def test_a_growing_conversation_is_appended_in_place_not_copied_each_turn(db, monkeypatch):
    embedder = HashingEmbedder()
    recall = RecallMemory(db, embedder, ranker=MessageRanker(db, embedder, VectorIndex(db)))
    for n in range(40):
        _say(recall, f"turn {n} about {'owls' if n % 5 == 0 else 'bread'}", n)
    recall.rank(1, "owls")
    made = []
    original = timelines._Room
    monkeypatch.setattr(timelines, "_Room", lambda *a: made.append(1) or original(*a))
    for n in range(40, 100):  # one message a turn, as a conversation grows
        _say(recall, f"turn {n} about {'owls' if n % 5 == 0 else 'bread'}", n)
        recall.rank(1, "owls")
    assert len(made) <= 1  # room for many turns at once, not a copy of the timeline per turn
    fresh = RecallMemory(db, embedder, ranker=MessageRanker(db, embedder, VectorIndex(db)))
    assert _ranking(recall, "owls") == _ranking(fresh, "owls")


def test_two_extensions_of_one_timeline_never_write_into_each_others_rows():
    lock = threading.Lock()
    start = timelines.Timeline(
        (1,),
        np.array([1, 2]),
        np.array(["Ana", "Ben"], dtype=object),
        np.array([False, True]),
        np.array([0.0, 60.0]),
        np.array([0, 0]),
        np.array([10, 20]),
    )
    chat = np.array([0])  # the agent's own chat, no imported conversation
    one = np.array([5])
    first = timelines.extended(
        start, (2,), np.array([3]), np.array([120.0]), np.array(["Ana"], dtype=object), chat, one, lock
    )
    second = timelines.extended(
        start, (2,), np.array([4]), np.array([10**6]), np.array(["Cleo"], dtype=object), chat, np.array([7]), lock
    )
    third = timelines.extended(
        first, (3,), np.array([5]), np.array([180.0]), np.array(["Ben"], dtype=object), chat, one, lock
    )
    assert first.ids.tolist() == [1, 2, 3] and first.same_session.tolist() == [False, True, True]
    assert second.ids.tolist() == [1, 2, 4] and second.same_session.tolist() == [False, True, False]
    assert second.authors.tolist() == ["Ana", "Ben", "Cleo"] and second.speakers == {"Cleo"}
    assert third.ids.tolist() == [1, 2, 3, 5] and third.times.tolist() == [0.0, 60.0, 120.0, 180.0]
    assert second.lengths.tolist() == [10, 20, 7] and third.lengths.tolist() == [10, 20, 5, 5]


def test_common_inner_words_propose_only_the_newest_texts_for_the_verbatim_comparison(db, monkeypatch):
    """Words found in a tenth of a million messages proposed 7,556 texts to read (0.4 s): the
    newest VERBATIM_CANDIDATES are compared, and a verbatim match among them is still found."""
    monkeypatch.setattr(message_ranking, "VERBATIM_SCAN_MAX", 5)
    monkeypatch.setattr(message_ranking, "PARTS_MAX", 5)
    monkeypatch.setattr(message_ranking, "VERBATIM_CANDIDATES", 10)
    recall = RecallMemory(db, HashingEmbedder())
    old = _say(recall, "so did you see the lake", 0)
    for n in range(30):
        _say(recall, f"did you see the news {n}", 1 + n)
    new = _say(recall, "and did you see the lake again", 40)
    compared = []
    monkeypatch.setattr(
        message_ranking, "contains_casefold", lambda text, query: compared.append(text) or int(query in text)
    )
    db.create_function("memdesk_contains", 2, message_ranking.contains_casefold)
    exact = {hit.id for hit in recall.rank(1, "did you see the lake") if hit.exact}
    assert new in exact and old not in exact  # the old one was not among the newest ten proposed
    assert 0 < len(compared) <= 10


def test_the_in_memory_verbatim_matches_are_the_stores_after_appends_edits_and_deletions(db, monkeypatch):
    """A conversation the parts index holds is matched verbatim from its casefolded copy of the
    texts, without the store reading every text: the same messages as the store's comparison."""
    embedder = HashingEmbedder()
    in_memory = RecallMemory(db, embedder, ranker=MessageRanker(db, embedder, VectorIndex(db)))
    by_store = MessageRanker(db, embedder, VectorIndex(db), by_parts=False)
    street = _say(in_memory, "We met on the Hauptstraße in Köln", 0)
    _say(in_memory, "It was 300 \u212a outside", 1)
    _say(in_memory, "The HAUPTSTRASSE was closed", 2)
    for n in range(20):
        _say(in_memory, f"note {n}: the street was closed again", 3 + n)
    statements = []
    query = db.query
    monkeypatch.setattr(db, "query", lambda sql, params=(): statements.append(sql) or query(sql, params))

    def exact(ranker, text):
        return {hit.id for hit in ranker.rank(1, text) if hit.exact}

    queries = ["hauptstrasse", "300 k", "STREET WAS closed", "was", "nothing like it", "köln"]
    for text in queries:
        assert exact(in_memory.ranker, text) == exact(by_store, text), text
    _say(in_memory, "a new street was closed too", 40)  # appended
    db.execute("UPDATE messages SET search_text = 'redacted' WHERE id = ?", (street,))  # as forget rewrites
    db.execute("DELETE FROM messages WHERE search_text LIKE 'note 1%'")
    for text in [*queries, "new street"]:
        assert exact(in_memory.ranker, text) == exact(by_store, text), text
    assert street not in exact(in_memory.ranker, "hauptstraße in")


def test_the_in_memory_search_reads_no_text_of_the_store(db, monkeypatch):
    embedder = HashingEmbedder()
    recall = RecallMemory(db, embedder, ranker=MessageRanker(db, embedder, VectorIndex(db)))
    target = _say(recall, "my locker code is XK-42z, don't forget", 0)
    for n in range(12):
        _say(recall, f"code review {n} about the locker", 1 + n)
    recall.rank(1, "warm the parts index")
    statements = []
    query = db.query
    monkeypatch.setattr(db, "query", lambda sql, params=(): statements.append(sql) or query(sql, params))
    assert {hit.id for hit in recall.rank(1, "Locker Code Is xk-42Z") if hit.exact} == {target}
    assert not any("memdesk_contains" in sql for sql in statements)


def test_folded_texts_match_within_one_message_and_name_each_message_once():
    texts = FoldedTexts()
    assert texts.containing(1, "ab") is None  # nothing held: the store answers
    texts.update(1, [(3, "ab"), (5, "CD ab AB"), (8, "Straße")], appended=False)
    assert texts.containing(1, "AB") == [3, 5]
    assert texts.containing(1, "bc") == []  # not across two messages
    assert texts.containing(1, "b\x00c") is None
    assert texts.containing(1, "STRASSE") == [8]
    texts.update(1, [(9, "abc")], appended=True)
    assert texts.containing(1, "ab") == [3, 5, 9]
    texts.update(1, [(9, "abc")], appended=False)  # rebuilt: only these
    assert texts.containing(1, "ab") == [9] and texts.containing(2, "ab") is None


def test_folded_texts_span_blocks_and_leave_a_conversation_too_long_to_the_store(monkeypatch):
    monkeypatch.setattr(folded_texts, "BLOCK_CHARS", 8)
    monkeypatch.setattr(folded_texts, "MAX_CHARS", 50)
    texts = FoldedTexts()
    texts.update(1, [(n, f"note {n} 🙂") for n in range(4)], appended=False)  # a block each
    texts.update(1, [(7, "Note seven")], appended=True)
    assert texts.containing(1, "NOTE") == [0, 1, 2, 3, 7]
    assert texts.containing(1, "2 🙂") == [2] and texts.containing(1, "🙂note") == []
    texts.update(1, [(8, "x" * 20)], appended=True)  # over MAX_CHARS: no longer held
    assert texts.containing(1, "note") is None
    texts.update(1, [(9, "a short note")], appended=False)  # rebuilt small enough
    assert texts.containing(1, "note") == [9]
