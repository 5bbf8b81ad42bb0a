"""The learned ranker's benchmarks at a tiny scale: the embedding cache, the candidates' data, the
training and its model file, and the cost of scoring. Tiny chats in BEAM's and LoCoMo's layouts
are made here (tests/evaluation); the hashing embedder stands for MiniLM; LightGBM is a training
extra the test lane does not install, so the trees are left out and the linear model stands in."""

from __future__ import annotations

import pickle

import numpy as np

from bench import ranker_cost, ranker_data, train_ranker
from bench.embedding_cache import CachedEmbedder
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.evaluation.beam import USER, load_chats
from memdesk.core.retrieval import features, learned
from tests.evaluation.test_beam_eval import write_chat


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def embed(self, texts):
        self.texts += len(texts)
        return super().embed(texts)


def test_the_cache_embeds_each_text_once_and_answers_from_disk_afterwards(tmp_path):
    first = CountingEmbedder()
    cache = CachedEmbedder(first, tmp_path)
    vectors = cache.embed(["a basil garden", "a grey cat", "a basil garden"])
    assert first.texts == 2 and np.allclose(vectors[0], vectors[2])
    second = CountingEmbedder()
    again = CachedEmbedder(second, tmp_path).embed(["a grey cat", "a basil garden"])
    assert second.texts == 0 and np.allclose(again, vectors[[1, 0]])


def locomo_sample(name: str) -> dict:
    turns = [
        ("Ana", "I started learning the cello this spring."),
        ("Ben", "Nice! I ran a marathon in Lisbon."),
        ("Ana", "My cello teacher is called Rosa."),
        ("Ben", "I adopted a grey cat named Pixel."),
    ]
    return {
        "sample_id": name,
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": w, "dia_id": f"D1:{n}", "text": t} for n, (w, t) in enumerate(turns, 1)],
        },
        "qa": [
            {"question": "What instrument is Ana learning?", "answer": "cello", "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Ben run a marathon?", "answer": "Lisbon", "evidence": ["D1:2"], "category": 4},
            {"question": "Where did Ana run a marathon?", "evidence": ["D1:2"], "category": 5},
        ],
    }


def test_the_data_and_the_training_give_a_model_file_the_app_reads(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    embedder = HashingEmbedder()
    chats = load_chats([write_chat(tmp_path / "beam" / n) for n in ("1", "2", "11")])
    for sample in chats:
        found = ranker_data.collect(sample, embedder, user_name=USER, kind="beam")
        (data / f"beam-{sample['sample_id']}.pkl").write_bytes(pickle.dumps(found))
    for name in ("conv-1", "conv-2"):
        found = ranker_data.collect(locomo_sample(name), embedder, user_name="", kind="locomo")
        (data / f"locomo-{name}.pkl").write_bytes(pickle.dumps(found))
    update = next(q for q in found["questions"] if q["evidence"])
    assert update["rows"].shape == (len(update["ids"]), len(features.FEATURES))
    beam = pickle.loads((data / "beam-1.pkl").read_bytes())
    knowledge = next(q for q in beam["questions"] if q["category"] == "knowledge_update")
    assert sorted(knowledge["labels"][knowledge["labels"] > 0].tolist()) == [1, 2]  # the update is 2
    assert any(q["unanswerable"] and not q["evidence"] for q in beam["questions"])  # the abstention, kept
    assert ranker_data.pool_report([beam])["beam"]["the pool"] == 1.0

    target = tmp_path / "ranker.json"
    report = train_ranker.run(data, target, makers=(train_ranker.HandFusion, train_ranker.LinearRanker))
    assert report["held_out"] == ["beam-11"] and report["chosen"] == "linear"
    assert set(report["cross_validated"]["linear"]) == {"locomo", "beam_dev"}
    assert "recall@10" in report["held_out_figures"]["hand fusion"]["all"]
    assert "in_section@8192" in report["held_out_figures"]["hand fusion"]["all"]
    scorer = learned.load(target)  # written either way: the learned ranker, or the fusion and the judge
    assert scorer.judge is not None and scorer.ranks == report["beats_hand_fusion_held_out"]
    assert scorer.card["held_out"] == ["beam-11"]


def test_scoring_costs_are_reported_against_a_fixed_reference():
    report = ranker_cost.run(candidates=50, runs=3)
    assert report["candidates"] == 50 and report["score_ms_p50"] >= 0 and report["dense_pass_ms_p50"] > 0
    assert {"score_to_dense_pass", "features_ms_p95", "kind"} <= set(report)
