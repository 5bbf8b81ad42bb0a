"""The lexical leg scores a bounded number of rows, whatever the store's size: a query of rare words
ranks exactly as FTS5 alone ranks it, a row holding a rarer word keeps its exact score and place
when a common word is asked too, and a query of only common words still finds the newest rows
that hold them. (SCORED_ROWS is lowered so that a few hundred rows make a word common.)"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from memdesk.core.base.clock import ManualClock, iso
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.archival import ArchivalMemory, NewPassage
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.retrieval import MessageRanker, PassageRanker, VectorIndex, bounded_fts
from memdesk.core.retrieval.bounded_fts import FtsIndex, best_matches
from memdesk.core.retrieval.messages import LEXICAL_INDEX
from memdesk.core.retrieval.query import fts_phrases

START = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
BOUND = 20
WEATHER = [f"the weather was {'grey' if n % 3 else 'bright and warm with a light wind'} on day {n}" for n in range(120)]


@pytest.fixture(autouse=True)
def bound(monkeypatch):
    monkeypatch.setattr(bounded_fts, "SCORED_ROWS", BOUND)


def say(db, text: str, agent_id: int = 1) -> int:
    when = START + timedelta(minutes=db.scalar("SELECT COUNT(*) FROM messages"))
    return db.execute(
        "INSERT INTO messages(agent_id, created_at, role, kind, content, search_text)"
        " VALUES (?, ?, 'user', 'user_message', ?, ?)",
        (agent_id, iso(when), text, text),
    ).lastrowid


@pytest.fixture
def conversation(db):
    """1,000 messages about lunch, 120 about the weather (a common word: six times the bound), the
    best of those for "weather" the oldest; herons in six, three of those about the weather too;
    another agent's heron."""
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('kim', '2026-01-01T00:00:00+00:00', '')")
    ids = {"oldest_best": say(db, "weather weather"), "heron": [], "heron_weather": []}
    ids["heron"] += [say(db, "a heron by the pond"), say(db, "the heron left the pond at dawn")]
    for n, text in enumerate(WEATHER):
        for k in range(8):
            say(db, f"lunch note {n}.{k}")
        say(db, text)
        if n in (30, 70, 110):
            ids["heron_weather"].append(say(db, f"weather or not, the heron came back ({n})"))
        if n == 90:
            ids["heron"].append(say(db, "grey heron on the fence"))
    say(db, "kim saw a heron too", agent_id=2)
    return ids


def unbounded(db, query: str, limit: int = 10_000) -> list[tuple]:
    return [tuple(r) for r in db.query(LEXICAL_INDEX.scored(), (" OR ".join(fts_phrases(query)), 1, limit))]


def bounded(db, query: str, limit: int = 10_000) -> list[tuple]:
    return best_matches(db.query, LEXICAL_INDEX, fts_phrases(query), 1, limit)


def test_a_query_of_rare_words_ranks_exactly_as_fts5_alone(db, conversation):
    assert bounded(db, "heron pond fence") == unbounded(db, "heron pond fence")
    assert bounded(db, "heron pond", limit=3) == unbounded(db, "heron pond", limit=3)


def test_rows_with_a_rarer_word_keep_their_exact_score_and_order_beside_a_common_word(db, conversation):
    herons = set(conversation["heron"] + conversation["heron_weather"])
    everything = unbounded(db, "heron weather")
    result = bounded(db, "heron weather", limit=50)
    assert result == sorted(result, key=lambda r: (-r[1], r[0]))
    ours = [(rowid, score) for rowid, score in result if rowid in herons]
    theirs = [(rowid, score) for rowid, score in everything if rowid in herons]
    assert [rowid for rowid, _ in ours] == [rowid for rowid, _ in theirs] and len(ours) == len(herons)
    assert [score for _, score in ours] == pytest.approx([score for _, score in theirs], rel=1e-12)
    # the herons that mention the weather too rank above those that do not, as without a bound
    assert {rowid for rowid, _ in ours[:3]} == set(conversation["heron_weather"])


def test_a_query_of_only_common_words_finds_the_best_of_the_newest_rows_holding_them(db, conversation):
    result = bounded(db, "weather", limit=5)
    assert len(result) == 5
    newest = [
        r[0]
        for r in db.query(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'weather' ORDER BY rowid DESC LIMIT ?", (BOUND,)
        )
    ]
    within = [r for r in unbounded(db, "weather") if r[0] >= min(newest)]
    assert result == sorted(within, key=lambda r: (-r[1], r[0]))[:5]
    assert (
        unbounded(db, "weather", limit=1)[0][0] == conversation["oldest_best"]
    )  # the price: an old row with only common words
    assert conversation["oldest_best"] not in {r[0] for r in result}


def test_another_agents_rows_are_never_returned(db, conversation):
    kim = best_matches(db.query, LEXICAL_INDEX, fts_phrases("heron weather"), 2, 10)
    assert [r[0] for r in kim] == [db.scalar("SELECT id FROM messages WHERE agent_id = 2")]


def _steps(rows: int, limit_rows: bool) -> int:
    """SQLite VM instructions one search runs over an in-memory index of ``rows`` rows that all
    hold the common word (a quarter of them the rare word too): work the engine does, counted
    exactly, where a clock would measure the machine."""
    connection = sqlite3.connect(":memory:")
    connection.execute(
        "CREATE VIRTUAL TABLE notes USING fts5(text, agent UNINDEXED, tokenize='porter unicode61 remove_diacritics 2')"
    )
    connection.executemany(
        "INSERT INTO notes(text, agent) VALUES (?, 1)",
        [(f"note {n} on the garden" + (" and the heron" if n % (rows // 5) == 0 else ""),) for n in range(rows)],
    )
    index = FtsIndex("notes", "f.agent")
    steps = [0]

    def count():
        steps[0] += 1
        return 0

    connection.set_progress_handler(count, 1)
    run = lambda sql, params: connection.execute(sql, params).fetchall()  # noqa: E731
    if limit_rows:
        found = best_matches(run, index, ['"heron"', '"garden"'], 1, 10)
    else:
        found = run(index.scored(), ('"heron" OR "garden"', 1, 10))
    connection.close()
    assert len(found) == 10
    return steps[0]


def test_the_work_of_a_search_does_not_grow_with_the_rows_a_common_word_matches():
    small, large = _steps(400, True), _steps(4000, True)
    assert large < 1.3 * small
    assert _steps(4000, False) > 5 * _steps(400, False)  # FTS5 alone scores every match


@pytest.mark.parametrize("by_parts", [True, False], ids=["parts", "whole messages"])
def test_conversation_search_with_a_common_word_still_puts_the_rare_match_first(db, conversation, by_parts):
    ranker = MessageRanker(db, None, VectorIndex(db), by_parts=by_parts)
    recall = RecallMemory(db, HashingEmbedder(), ranker=ranker)
    top = recall.rank(1, "what about the heron and the weather?")[0]
    assert top.id in conversation["heron_weather"]
    assert recall.rank(1, "weather")  # only a common word: still found


def test_archival_search_with_a_common_word_still_puts_the_rare_match_first(db):
    archival = ArchivalMemory(db, HashingEmbedder(), ManualClock(START), ranker=PassageRanker(db, None))
    archival.add(1, [NewPassage(f"weather report {n}: grey skies", START) for n in range(100)])
    [kingfisher] = archival.add(1, [NewPassage("a kingfisher dived in grey weather", START)])
    assert archival._ranker.rank(1, "kingfisher weather")[0].id == kingfisher
    assert len(archival._ranker.rank(1, "weather")) > 0


def test_the_bound_holds_every_depth_a_search_asks_for(monkeypatch):
    """A query of common words only fills its results from the newest SCORED_ROWS matches."""
    from memdesk.core.retrieval import message_parts, messages, passages

    monkeypatch.undo()  # the module's own bound, not the lowered one
    assert bounded_fts.SCORED_ROWS >= max(messages.LEXICAL_DEPTH, passages.SEARCH_DEPTH, message_parts.PART_DEPTH)
