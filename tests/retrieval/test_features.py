"""What the learned ranker reads of each candidate: the legs' signals, who said it, when, its
neighbours, a newer message about the same thing, and the question's shape."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.retrieval import MessageRanker, VectorIndex, features
from memdesk.core.retrieval.features import INDEX, Legs, candidate_features, pool, question_features

START = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def legs(n: int, **given) -> Legs:
    values = {
        "lexical": np.zeros(n),
        "cosine": np.zeros(n),
        "centred": np.zeros(n),
        "lift": np.zeros(n),
        "graph": None,
        "dates": None,
        "fused": np.zeros(n),
        "exact": np.zeros(n, dtype=bool),
        "named": None,
        "asker": None,
        "about_oneself": False,
        "has_date": False,
    }
    values.update(given)
    return Legs(**values)


def test_the_pool_holds_verbatim_matches_the_fusions_best_and_each_legs_own_best():
    n = 1000
    rng = np.random.default_rng(1)
    fused = rng.random(n)
    lexical = np.zeros(n)
    lexical[[3, 4]] = [0.2, 0.9]  # matched by words, low in the fusion
    fused[[3, 4]] = 0.0
    cosine = rng.random(n) * 0.5
    cosine[7] = 0.99
    fused[7] = 0.0
    exact = np.zeros(n, dtype=bool)
    exact[11] = True
    fused[11] = -1.0
    chosen = pool(legs(n, fused=fused, lexical=lexical, cosine=cosine, exact=exact), size=50, leg_size=5)
    assert {3, 4, 7, 11} <= set(chosen.tolist())
    assert set(np.argsort(-fused)[:50].tolist()) <= set(chosen.tolist())
    assert (np.diff(chosen) > 0).all() and len(chosen) < 50 + 5 + 5 + 1 + 1


def test_neighbours_count_only_within_the_session_and_recency_runs_from_the_newest():
    n = 4
    same = np.array([False, True, False, True])  # sessions: (0, 1) and (2, 3)
    lexical = np.array([0.0, 1.0, 0.5, 0.0])
    rows = candidate_features(
        "what about the garden?",
        legs(n, lexical=lexical, fused=lexical.copy()),
        np.arange(n),
        same_session=same,
        times=np.array([0.0, 60.0, 86400.0 * 9, 86400.0 * 9 + 60]),
        lengths=np.array([10, 20, 30, 40]),
        parts=np.ones(n),
    )
    assert rows[:, INDEX["next_lexical"]].tolist() == [1.0, 0.0, 0.0, 0.0]  # 1's next is another session's
    assert rows[:, INDEX["previous_lexical"]].tolist() == [0.0, 0.0, 0.0, 0.5]
    assert rows[:, INDEX["recency"]].tolist() == [1.0, 2 / 3, 1 / 3, 0.0]
    assert rows[0, INDEX["age_days"]] == np.log1p((86400.0 * 9 + 60) / 86400)
    assert rows[:, INDEX["session_best"]].tolist() == [1.0, 1.0, 0.5, 0.5]
    assert rows[:, INDEX["lexical_rank"]].tolist() == [0.0, 1.0, np.log2(3), 0.0]  # no match, no rank


def test_the_named_speaker_and_the_asker_are_marked_only_when_the_question_is_about_them():
    n = 3
    named = np.array([True, False, True])
    rows = candidate_features(
        "what did Ana paint?",
        legs(n, named=named),
        np.arange(n),
        same_session=np.ones(n, dtype=bool),
        times=np.zeros(n),
        lengths=np.ones(n),
        parts=np.ones(n),
    )
    assert rows[:, INDEX["named_speaker"]].tolist() == [1.0, 0.0, 1.0]
    assert rows[:, INDEX["other_speaker"]].tolist() == [0.0, 1.0, 0.0]
    assert (rows[:, INDEX["q_names_speaker"]] == 1).all() and (rows[:, INDEX["asker"]] == 0).all()
    plain = candidate_features(
        "what did they paint?",
        legs(n),
        np.arange(n),
        same_session=np.ones(n, dtype=bool),
        times=np.zeros(n),
        lengths=np.ones(n),
        parts=np.ones(n),
    )
    assert (plain[:, [INDEX["named_speaker"], INDEX["other_speaker"], INDEX["q_names_speaker"]]] == 0).all()


def test_a_newer_message_about_the_same_thing_is_seen_from_both_sides():
    n = 3
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.8, 0.6]])  # 0 and 2 say nearly the same, 2 later
    rows = candidate_features(
        "how many commits are merged?",
        legs(n, fused=np.array([1.0, 0.5, 0.9])),
        np.arange(n),
        same_session=np.zeros(n, dtype=bool),
        times=np.arange(n) * 1.0,
        lengths=np.ones(n),
        parts=np.ones(n),
        vectors=lambda positions: vectors[positions],
    )
    assert rows[:, INDEX["newer_similar"]].round(6).tolist() == [0.8, 0.6, 0.0]
    assert rows[:, INDEX["older_similar"]].round(6).tolist() == [0.0, 0.0, 0.8]


def test_the_questions_shape_is_read_from_its_words():
    shape = question_features("How many commits have I merged into main by now?", legs(1, about_oneself=True), 100)
    assert shape["q_how"] == 1 and shape["q_quantity"] == 1 and shape["q_latest"] == 1
    assert shape["q_about_oneself"] == 1 and shape["q_what"] == 0 and shape["q_size"] == 2.0
    assert question_features("Did Ana go camping in July 2023?", legs(1, has_date=True), 10)["q_yes_no"] == 1
    assert question_features("And when did she move?", legs(1), 10)["q_when"] == 1


def test_the_ranker_gives_every_candidate_a_row_of_every_feature(db):
    ranker = MessageRanker(db, HashingEmbedder(), VectorIndex(db))
    recall = RecallMemory(db, HashingEmbedder(), ranker=ranker)
    for n, (author, text) in enumerate(
        [("Ana", "I planted basil in the garden."), ("Ben", "Nice, I like basil."), ("Ana", "The cat sleeps.")]
    ):
        recall.add(
            1,
            role="user",
            kind="user_message",
            content=text,
            search_text=text,
            author=author,
            created_at=START + timedelta(minutes=n),
        )
    recall.index_pending(1)
    ids, rows, fused = ranker.candidates(1, "What did Ana plant in the garden?")
    assert rows.shape == (len(ids), len(features.FEATURES)) and len(fused) == len(ids)
    first = rows[list(ids).index(ids.min())]
    assert first[INDEX["lexical"]] == 1.0 and first[INDEX["named_speaker"]] == 1.0
    assert first[INDEX["length"]] == np.log1p(len("I planted basil in the garden."))
