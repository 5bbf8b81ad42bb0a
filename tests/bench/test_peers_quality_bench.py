"""The peers' retrieval recipes on a tiny LoCoMo-shaped conversation and a tiny BEAM chat (made
here, not copied from either data set): every recipe and MemDesk's own search report recall@10,
and each recipe follows what its app does."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench import peers_quality
from memdesk.core.embedding.hashing import HashingEmbedder
from tests.evaluation.test_beam_eval import write_chat

TOPICS = ["violin lessons", "garden tomatoes", "marathon training", "harbour sailing", "pottery class"]


def _locomo(path):
    turns = []
    for n in range(40):
        topic = TOPICS[n % len(TOPICS)]
        turns.append(
            {
                "speaker": "Mara" if n % 2 else "Tobi",
                "dia_id": f"D1:{n + 1}",
                "text": f"Talked about {topic} today, note {n}.",
            }
        )
    sample = {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Mara",
            "speaker_b": "Tobi",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": turns,
        },
        "qa": [
            {"question": "What did they say about violin lessons?", "evidence": ["D1:1"], "category": 4},
            {"question": "How is the marathon training going?", "evidence": ["D1:3", "D1:8"], "category": 1},
            {"question": "Which pottery class?", "evidence": ["D9:9"], "category": 4},  # no such turn: skipped
        ],
    }
    path.write_text(json.dumps([sample]))
    return path


def test_every_recipe_and_memdesks_search_report_recall_at_ten(tmp_path):
    report = peers_quality.run(
        _locomo(tmp_path / "locomo.json"), [write_chat(tmp_path / "beam" / "1")], tmp_path / "cache", HashingEmbedder()
    )
    for data in ("locomo", "beam"):
        for recipe in (*peers_quality.RECIPES, "memdesk"):
            row = report[data][recipe]["all"]
            assert 0.0 <= row["recall@10"] <= 1.0 and row["n"] > 0, (data, recipe)
        assert report[data]["best_peer_recipe"] in peers_quality.RECIPES
    assert report["locomo"]["vector_only"]["all"]["n"] == 2  # the question without evidence is skipped
    assert report["locomo"]["memdesk"]["all"]["n"] == 2
    assert list((tmp_path / "cache").iterdir())  # vectors kept for the next run


def test_open_webuis_hybrid_without_a_reranker_returns_the_vector_top_k():
    """BM25 and vector hits are fused, then sorted by cosine (no reranking model by default): the
    vector top k always wins that sort, so the recipe's BM25 cannot change what is returned."""
    rng = np.random.default_rng(0)
    texts = [f"note {i} about {TOPICS[i % 5]}" for i in range(60)]
    vectors = rng.standard_normal((60, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    bm25 = peers_quality.BM25Okapi([t.split() for t in texts])
    fts = peers_quality._fts(texts)
    for q in range(5):
        rankings = peers_quality.recipe_rankings(texts, vectors, "garden tomatoes", vectors[q], fts, bm25)
        assert rankings["openwebui_hybrid"] == rankings["vector_only"]
        assert rankings["vector_only"][0] == q


def test_gpt4all_hybrid_lifts_an_exact_phrase_match_the_vectors_missed():
    texts = ["the harbour at dawn"] + [f"filler text number {i}" for i in range(30)]
    vectors = np.eye(31, 8, dtype=np.float32) + 0.01
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = vectors[30]  # the vectors point elsewhere
    rankings = peers_quality.recipe_rankings(
        texts,
        vectors,
        "harbour at dawn",
        query,
        peers_quality._fts(texts),
        peers_quality.BM25Okapi([t.split() for t in texts]),
    )
    assert 0 not in rankings["vector_only"]
    assert rankings["gpt4all_hybrid"][0] == 0


def test_bm25_okapi_scores_as_rank_bm25_does():
    bm25 = peers_quality.BM25Okapi([["a", "b"], ["b", "c", "c"], ["d"]])
    # idf(c) = ln((3 - 1 + 0.5) / (1 + 0.5)); tf 2 in a document of 3 words, average length 2
    idf = np.log(2.5 / 1.5)
    expected = idf * 2 * 2.5 / (2 + 1.5 * (1 - 0.75 + 0.75 * 3 / 2))
    assert bm25.scores(["c"])[1] == pytest.approx(expected)
    assert bm25.top(["c"], 1) == [1]
