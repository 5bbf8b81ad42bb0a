"""The LoCoMo evaluation on a tiny conversation in LoCoMo's format (the real file is CC BY-NC and
stays outside the repository)."""

from __future__ import annotations

import json

from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.evaluation.locomo import evaluate


def test_recall_is_computed_per_category_and_missing_evidence_is_skipped(tmp_path):
    sample = {
        "sample_id": "conv-test",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I started learning the cello this spring."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice! I ran a marathon in Lisbon."},
            ],
            "session_2_date_time": "9:00 am on 20 June, 2023",
            "session_2": [
                {
                    "speaker": "Ana",
                    "dia_id": "D2:1",
                    "text": "My cello teacher is called Rosa.",
                    "blip_caption": "a photo of a cello",
                },
                {"speaker": "Ben", "dia_id": "D2:2", "text": "I adopted a grey cat."},
            ],
        },
        "qa": [
            {"question": "What instrument is Ana learning?", "answer": "cello", "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Ben run a marathon?", "answer": "Lisbon", "evidence": ["D1:2"], "category": 4},
            {"question": "Who teaches Ana the cello?", "answer": "Rosa", "evidence": ["D2:1"], "category": 1},
            {"question": "What is missing?", "answer": "x", "evidence": ["D9:9"], "category": 2},
        ],
    }
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    report = evaluate(path, HashingEmbedder(), ks=(1, 5))
    assert report["questions"] == 3 and report["skipped"] == 1
    assert report["fused"]["all"]["recall@5"] == 1.0
    assert report["bm25"]["single-hop"]["n"] == 2
    assert set(report["fused"]) >= {"all", "single-hop", "multi-hop", "held_out", "conv-test"}


def test_the_nothing_on_that_detector_is_scored_on_answerable_against_adversarial_questions(tmp_path):
    """Adversarial questions ask one speaker about what the other said: the detector should score
    them below the answerable ones, and the report says how often it would say "nothing"."""
    turns = [
        ("Ana", "I started learning the cello this spring."),
        ("Ben", "Nice! I ran a marathon in Lisbon."),
        ("Ana", "My cello teacher is called Rosa."),
        ("Ben", "I adopted a grey cat named Pixel."),
    ]
    sample = {
        "sample_id": "conv-test",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": who, "dia_id": f"D1:{n}", "text": text} for n, (who, text) in enumerate(turns, start=1)
            ],
        },
        "qa": [
            {
                "question": "What instrument is Ana learning this spring?",
                "answer": "cello",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {"question": "Where did Ben run a marathon?", "answer": "Lisbon", "evidence": ["D1:2"], "category": 4},
            {"question": "What is the name of Ben's grey cat?", "answer": "Pixel", "evidence": ["D1:4"], "category": 4},
            {
                "question": "Where did Ana run a marathon?",
                "adversarial_answer": "Lisbon",
                "evidence": ["D1:2"],
                "category": 5,
            },
            {
                "question": "What is the name of Ana's grey cat?",
                "adversarial_answer": "Pixel",
                "evidence": ["D1:4"],
                "category": 5,
            },
        ],
    }
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    report = evaluate(path, HashingEmbedder(), ks=(1, 5))
    # support.py's score alone; the learned judge automatic recall uses is reported beside it
    # (tests/retrieval/test_shipped_judge.py measures it on real held-out data)
    assert (
        report["nothing_detector"]["all"]["answerable"] == 3 and report["nothing_detector"]["all"]["unanswerable"] == 2
    )
    detector = report["nothing_detector_by_support"]
    assert detector["all"]["answerable"] == 3 and detector["all"]["unanswerable"] == 2
    assert detector["all"]["auroc"] == 1.0
    assert detector["all"]["nothing_for_answerable"] == 0.0 and detector["all"]["nothing_for_unanswerable"] == 1.0
    assert detector["held_out"]["auroc"] == 1.0
