"""Long messages searched by their parts: how they are cut, and that a detail deep inside a long
message ranks it as high as a short message saying the same, with the part that matched."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import pairwise

from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.retrieval import MessageRanker, VectorIndex
from memdesk.core.retrieval.message_parts import PART_CHARS, WHOLE_CHARS, split_parts

WHEN = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
PLAN = "\n".join(
    f"Step {n}: configure the worker pool and the retry queue for stage {n} of the rollout." for n in range(1, 80)
)
DETAIL = "The staging database password rotates every ninety days through the vault."


def test_a_short_message_is_one_part_and_a_long_one_is_cut_at_line_ends_covering_it_all():
    assert split_parts("Hello there") == [(0, 11)]
    text = PLAN + "\n" + DETAIL
    spans = split_parts(text)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in pairwise(spans))  # no gap, no overlap
    assert all(text[end - 1] == "\n" for _, end in spans[:-1])  # cut after a line
    assert all(end - start <= PART_CHARS * 1.25 for start, end in spans)
    unbroken = "x" * (3 * PART_CHARS)
    assert split_parts(unbroken) == [(0, PART_CHARS), (PART_CHARS, 2 * PART_CHARS), (2 * PART_CHARS, 3 * PART_CHARS)]
    assert len(split_parts("y" * WHOLE_CHARS)) == 1


def add(recall, text):
    return recall.add(1, role="user", kind="user_message", content=text, search_text=text, created_at=WHEN)


def build(db, by_parts=True):
    ranker = MessageRanker(db, HashingEmbedder(), VectorIndex(db), by_parts=by_parts)
    return ranker, RecallMemory(db, HashingEmbedder(), ranker=ranker)


def test_a_detail_deep_in_a_long_message_ranks_it_first_with_the_matching_part(db):
    ranker, recall = build(db)
    long_message = add(recall, PLAN + "\n" + DETAIL + "\n" + PLAN)
    for n in range(30):
        add(recall, f"We talked about the old cathedral and the garden, day {n}.")
    add(recall, "The password for the wifi router is on the fridge.")
    question = "How often does the staging database password rotate?"
    top = recall.rank(1, question, dense=False)[0]  # the lexical leg is the one scored by parts
    assert top.id == long_message.id
    start, end = top.part
    assert DETAIL in long_message.search_text[start:end] and end - start < 2 * PART_CHARS
    short = recall.rank(1, "wifi router")[0]
    assert short.part is None  # a message of one part needs no pointer into it


def test_the_parts_follow_the_messages_added_changed_and_deleted(db):
    ranker, recall = build(db)
    first = add(recall, "The lighthouse keeper logs every ship.")
    assert [r.id for r in recall.rank(1, "lighthouse")] == [first.id]
    second = add(recall, "A second lighthouse stands on the cape.")
    assert {r.id for r in recall.rank(1, "lighthouse")} == {first.id, second.id}
    db.execute("UPDATE messages SET search_text = 'redacted' WHERE id = ?", (first.id,))
    assert [r.id for r in recall.rank(1, "lighthouse keeper")] == [second.id]  # the old text is not searchable
    db.execute("DELETE FROM messages WHERE id = ?", (second.id,))
    assert recall.rank(1, "cape") == []


def test_a_message_rewritten_to_the_same_length_is_no_longer_found_by_its_old_words(db):
    """forget rewrites a message in place: the parts must follow even when the length is the same."""
    ranker, recall = build(db)
    message = add(recall, "Ann lives on Elm Street.")
    assert [r.id for r in recall.rank(1, "Ann", dense=False)] == [message.id]
    db.execute(
        "UPDATE messages SET search_text = 'Xyz lives on Elm Street.' WHERE id = ?", (message.id,)
    )  # as forget rewrites
    assert recall.rank(1, "Ann", dense=False) == []
    db.execute("UPDATE messages SET search_text = 'Ann lives on Elm Street.' WHERE id = ?", (message.id,))
    assert [r.id for r in recall.rank(1, "Ann elm", dense=False)] == [message.id]  # a new query: no cached ranking


def test_opening_an_agent_builds_its_parts_before_the_first_search(db):
    """The parts index is built when the agent opens (the window warms it in the background), so the
    first automatic recall does not spend its deadline building it."""
    ranker, recall = build(db)
    add(recall, PLAN + "\n" + DETAIL)
    assert ranker._parts_token.get(1) is None
    ranker.warm(1)
    warmed = ranker._parts_token.get(1)
    assert warmed is not None
    top = recall.rank(1, "staging database password", dense=False)[0]
    assert top.part is not None and ranker._parts_token.get(1) == warmed  # nothing rebuilt at the search


def test_a_conversation_longer_than_the_parts_limit_is_scored_by_whole_messages(db, monkeypatch):
    from memdesk.core.retrieval import messages

    monkeypatch.setattr(messages, "PARTS_MAX", 1)
    ranker, recall = build(db)
    add(recall, PLAN + "\n" + DETAIL)
    add(recall, "The password for the wifi router is on the fridge.")
    ranker.warm(1)
    assert ranker._parts_token.get(1) is None
    assert all(r.part is None for r in recall.rank(1, "staging database password", dense=False))


def test_a_message_knows_its_parts_after_appends_and_after_an_edit_rebuilds_the_index(db):
    """How many parts a message has is kept as the index is built (asking the index read every
    row of it: 5 s at a million parts)."""
    ranker, recall = build(db)
    add(recall, "A short note on the staging database.")
    recall.rank(1, "staging", dense=False)
    long_message = add(recall, PLAN + "\n" + DETAIL)  # appended to the built index
    assert recall.rank(1, "staging database password rotates", dense=False)[0].part is not None
    db.execute("UPDATE messages SET search_text = ? WHERE id = ?", (DETAIL, long_message.id))  # now one part: rebuilt
    top = recall.rank(1, "staging database password rotates", dense=False)[0]
    assert top.id == long_message.id and top.part is None
