"""A query that names a calendar date narrows the conversation search to what was said that day."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.retrieval import MessageRanker, VectorIndex
from memdesk.core.retrieval.query import mentioned_dates
from memdesk.core.storage import open_database


@pytest.mark.parametrize(
    "query, expected",
    [
        ("What did Maria do on 31 July, 2023?", [(date(2023, 7, 31), date(2023, 7, 31))]),
        ("and on May 8th 2023?", [(date(2023, 5, 8), date(2023, 5, 8))]),
        ("the 3rd of Sept 2024", [(date(2024, 9, 3), date(2024, 9, 3))]),
        ("notes from 2023-05-09", [(date(2023, 5, 9), date(2023, 5, 9))]),
        ("what happened in July 2023", [(date(2023, 7, 1), date(2023, 7, 31))]),
        ("in December, 2022", [(date(2022, 12, 1), date(2022, 12, 31))]),
        ("in 2023", []),  # a year alone narrows nothing
        ("on 31 July", []),  # nor a date without its year
        ("I may go", []),
    ],
)
def test_dates_the_query_names(query, expected):
    assert mentioned_dates(query) == expected


def test_messages_of_the_named_day_rank_first(tmp_path):
    db = open_database(tmp_path / "memdesk.sqlite3")
    try:
        db.execute(
            "INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2023-01-01T00:00:00+00:00', '')"
        )
        recall = RecallMemory(db, HashingEmbedder(), ranker=MessageRanker(db, HashingEmbedder(), VectorIndex(db)))
        start = datetime(2023, 7, 1, 18, 0, tzinfo=UTC)
        for day in range(1, 40):  # the same words every day: only the date tells them apart
            recall.add(
                1,
                role="user",
                kind="user_message",
                content="volunteering again",
                search_text="volunteering again",
                created_at=start + timedelta(days=day - 1),
            )
        ranked = recall.get_many([r.id for r in recall.rank(1, "What volunteering did I do on 31 July, 2023?")[:3]])
        # The day itself and a day either side (times are UTC, the user's dates are local).
        assert sorted(m.created_at.date() for m in ranked) == [date(2023, 7, 30), date(2023, 7, 31), date(2023, 8, 1)]
        plain = recall.rank(1, "What volunteering did I do?")
        assert recall.get(plain[0].id).created_at.date() == date(2023, 8, 8)  # ties: newest first, as before
    finally:
        db.close()


def test_names_are_taken_out_of_a_query_word_by_word():
    from memdesk.core.retrieval.query import without_words

    assert without_words("What did Jean-Luc Picard say about tea?", ["Jean-Luc Picard"]) == "What did say about tea"
    assert without_words("Ana?", ["Ana"]) == ""  # nothing left to search for: the caller keeps the query
    assert without_words("what did you and Ana do", ["ana"]) == ""
