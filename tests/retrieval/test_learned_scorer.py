"""The learned scorer: a model file read and evaluated with NumPy alone, refused when it does not
fit this version, and the ranking it gives the conversation search."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.retrieval import MessageRanker, VectorIndex, learned
from memdesk.core.retrieval.features import FEATURES, INDEX
from memdesk.core.retrieval.learned import FORMAT, FORMAT_VERSION, LearnedScorer, Linear, ModelFormatError, Trees
from memdesk.core.retrieval.nothing_judge import JUDGE_FEATURES

START = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def linear_document(weights: dict[str, float], bias: float = 0.0) -> dict:
    vector = [weights.get(name, 0.0) for name in FEATURES]
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "name": "test-linear",
        "features": list(FEATURES),
        "kind": "linear",
        "linear": {"weights": vector, "bias": bias},
    }


def test_trees_send_a_sample_left_at_or_below_the_threshold_and_add_their_leaves():
    # tree 0: feature 0 <= 0.5 ? leaf 1.0 : (feature 1 <= 2 ? leaf 2.0 : leaf 3.0); tree 1: a single leaf 10
    trees = Trees(
        roots=np.array([0, ~3]),
        feature=np.array([0, 1]),
        threshold=np.array([0.5, 2.0]),
        left=np.array([~0, ~1]),
        right=np.array([1, ~2]),
        leaf=np.array([1.0, 2.0, 3.0, 10.0]),
        depth=3,
    )
    x = np.zeros((4, len(FEATURES)))
    x[:, 0] = [0.5, 0.6, 0.6, -1.0]
    x[:, 1] = [9.0, 2.0, 2.1, 0.0]
    assert trees.score(x).tolist() == [11.0, 12.0, 13.0, 11.0]


def test_the_shipped_model_reads_the_features_this_version_computes():
    scorer = learned.shipped()
    assert scorer is not None, "memdesk/resources/ranker.json is missing or refused"
    assert scorer.judge is not None and scorer.card["held_out"]
    rows = np.random.default_rng(0).random((1000, len(FEATURES)))
    scores = scorer.score(rows)
    assert scores.shape == (1000,) and np.isfinite(scores).all()


def test_a_model_for_other_features_another_format_or_broken_trees_is_refused():
    good = linear_document({"lexical": 1.0})
    assert isinstance(learned.parse(good).model, Linear)
    for broken in (
        {**good, "features": [*FEATURES, "something new"]},
        {**good, "version": FORMAT_VERSION + 1},
        {**good, "format": "another"},
        {**good, "kind": "forest"},
        {**good, "linear": {"weights": [1.0], "bias": 0}},
        {**good, "judge": {"features": ["support"], "weights": [1.0], "bias": 0, "bars": [0.5, 0.5]}},
        {
            **good,
            "kind": "trees",
            "trees": {"roots": [0], "feature": [0], "threshold": [0.1], "left": [~5], "right": [~0], "leaf": [1.0]},
        },
        {
            **good,
            "kind": "trees",
            "trees": {
                "roots": [0],
                "feature": [999],
                "threshold": [0.1],
                "left": [~0],
                "right": [~0],
                "leaf": [1.0],
                "depth": 1,
            },
        },  # fmt: skip
    ):
        with pytest.raises(ModelFormatError):
            learned.parse(broken)


def test_the_app_needs_no_training_library_to_score():
    code = (
        "import sys, numpy as np\n"
        "from memdesk.core.retrieval import learned, features\n"
        "s = learned.shipped()\n"
        "s.score(np.zeros((3, len(features.FEATURES))))\n"
        "heavy = [m for m in ('lightgbm', 'sklearn', 'scipy', 'torch') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def conversation(db, scorer: LearnedScorer | None):
    recall = RecallMemory(
        db, HashingEmbedder(), ranker=MessageRanker(db, HashingEmbedder(), VectorIndex(db), scorer=scorer)
    )
    ids = []
    for n, text in enumerate(
        [
            "We merged 150 commits into main.",
            "The garden needs water.",
            "Now 165 commits are merged into main.",
            "How many commits are merged into main",
        ]
    ):
        ids.append(
            recall.add(
                1,
                role="user",
                kind="user_message",
                content=text,
                search_text=text,
                author="Ana",
                created_at=START + timedelta(days=n),
            ).id
        )
    return recall, ids


def test_the_learned_ranking_follows_the_model_with_verbatim_matches_first(db):
    newest_first = learned.parse(linear_document({"recency": -1.0, "lexical": 0.1}))
    recall, ids = conversation(db, newest_first)
    ranking = recall.rank(1, "how many commits are merged into main")
    assert ranking[0].id == ids[3] and ranking[0].exact  # the verbatim match, whatever the model says
    rest = [hit.id for hit in ranking[1:]]
    assert rest == [ids[2], ids[1], ids[0]]  # by the model: the newest first
    assert all(hit.features is not None and hit.features.shape == (len(FEATURES),) for hit in ranking)
    assert [round(hit.score, 6) for hit in ranking[1:]] == sorted(
        (round(h.score, 6) for h in ranking[1:]), reverse=True
    )
    assert ranking[1].features[INDEX["recency"]] == 1 / 3


def test_without_a_model_the_hand_fusion_ranks_as_before(db):
    recall, ids = conversation(db, None)
    ranking = recall.rank(1, "how many commits are merged into main")
    assert ranking[0].id == ids[3] and all(hit.features is None for hit in ranking)
    assert ids[1] not in [hit.id for hit in ranking]  # the garden shares no word: the fusion keeps it out


def test_the_judge_reads_the_features_it_was_trained_on():
    weights = [0.0] * len(JUDGE_FEATURES)
    document = {
        **linear_document({"lexical": 1.0}),
        "judge": {"features": list(JUDGE_FEATURES), "weights": weights, "bias": 0.0, "bars": [0.7, 0.4]},
    }
    judge = learned.parse(document).judge
    unnamed = np.zeros(len(JUDGE_FEATURES))
    named = unnamed.copy()
    named[JUDGE_FEATURES.index("q_names_speaker")] = 1.0
    assert judge is not None and judge.probability(unnamed) == 0.5
    assert judge.support(unnamed) == pytest.approx(0.2)  # 0.7 - 0.5: answered
    assert judge.support(named) == pytest.approx(-0.1)  # a question about one speaker has its own bar


def test_a_fusion_model_ranks_as_the_hand_fusion_and_describes_the_hits_its_judge_reads(db):
    recall, ids = conversation(db, None)
    fusion_only = learned.parse({**linear_document({}), "kind": "fusion"})
    assert not fusion_only.ranks
    judged = RecallMemory(
        db, HashingEmbedder(), ranker=MessageRanker(db, HashingEmbedder(), VectorIndex(db), scorer=fusion_only)
    )
    query = "how many commits are merged into main"
    by_hand = recall.rank(1, query)
    described = judged.rank(1, query)
    assert [(h.id, h.score, h.exact) for h in described] == [(h.id, h.score, h.exact) for h in by_hand]
    assert all(h.features is not None for h in described[:10])
    rows = np.stack([h.features for h in described])
    assert fusion_only.score(rows).tolist() == rows[:, INDEX["fused"]].tolist()
    assert rows[0, INDEX["exact"]] == 1.0 and rows[0, INDEX["fused"]] == max(rows[:, INDEX["fused"]])


def test_the_judge_reads_the_hits_in_the_rankings_score_order_whatever_order_they_are_shown_in():
    """The ranking may place the newer of two values above an older, better-scored hit
    (versions.newer_values_first); the judge was trained on the score order, and reads that."""
    weights = np.zeros(len(JUDGE_FEATURES))
    weights[JUDGE_FEATURES.index("top_score")] = 3.0
    weights[JUDGE_FEATURES.index("top_margin")] = 2.0
    document = {
        **linear_document({}),
        "kind": "fusion",
        "judge": {"features": list(JUDGE_FEATURES), "weights": weights.tolist(), "bias": 0.0, "bars": [0.5, 0.5]},
    }
    scorer = learned.parse(document)
    rows = np.zeros((4, len(FEATURES)))
    rows[:, INDEX["fused"]] = [1.0, 0.6, 0.5, 0.2]
    shown = rows[[2, 0, 1, 3]]
    assert scorer.nothing_support(0.3, shown) == scorer.nothing_support(0.3, rows)
    exact_first = rows[[3, 0, 1, 2]].copy()
    exact_first[0, INDEX["exact"]] = 1.0  # a verbatim match stays first, whatever its score
    assert scorer.nothing_support(0.3, exact_first) != scorer.nothing_support(0.3, rows)
