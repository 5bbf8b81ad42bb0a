"""bench.peers at a tiny size: every engine (MemDesk and the four peers' engines, each in fresh
processes) reports every figure of the issue, and the JSON has ``engines`` and
``ratios_vs_best_peer``. The figures themselves come from ``--n 100000`` and ``--n 1000000`` runs;
no timing is asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import peer_engines, peers

FIGURES = (
    "ingest_rows_per_s",
    "search_p50_ms",
    "search_p95_ms",
    "search_after_write_p50_ms",
    "search_cpu_p50_ms",
    "search_after_write_cpu_p50_ms",
    "open_to_first_search_s",
    "resident_mb",
    "disk_mb_per_100k",
    "recall_at_10",
)
ROOT = Path(__file__).resolve().parents[2]


def test_the_bench_prints_one_json_object_with_every_engines_figures_and_the_ratios(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "bench.peers", "--n", "1500", "--queries", "4", "--json", "--workdir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1
    report = json.loads(lines[0])
    assert set(report["engines"]) == set(peer_engines.ENGINES)
    for name, figures in report["engines"].items():
        assert all(figures[key] is not None for key in FIGURES), name
        assert figures["ingest_rows_per_s"] > 0 and figures["search_p50_ms"] > 0
    # exact engines find the exact top 10; so does MemDesk on clustered vectors
    for name in ("memdesk", "anythingllm_lancedb", "jan_sqlite_vec"):
        assert report["engines"][name]["recall_at_10"] == 1.0, name
    assert set(report["ratios_vs_best_peer"]) == set(FIGURES)
    assert list(tmp_path.iterdir()) == []  # every store was made in a temporary folder, and removed


def test_a_ratio_above_one_means_memdesk_is_better_whichever_way_a_figure_points():
    engines = {
        "memdesk": {"search_p50_ms": 5.0, "ingest_rows_per_s": 100.0, "recall_at_10": 1.0},
        "a": {"search_p50_ms": 10.0, "ingest_rows_per_s": 400.0, "recall_at_10": 0.9},
        "b": {"search_p50_ms": 20.0, "ingest_rows_per_s": 50.0, "recall_at_10": 0.5},
    }
    ratios = peers.ratios(engines)
    assert ratios["search_p50_ms"] == 2.0  # the best peer's time over MemDesk's
    assert ratios["ingest_rows_per_s"] == 0.25  # MemDesk's throughput over the best peer's
    assert ratios["recall_at_10"] == round(1.0 / 0.9, 3)


def test_the_exact_truth_is_the_top_ten_of_the_full_product(tmp_path):
    peers.make_data(tmp_path, 3000, 5)
    vectors = np.load(tmp_path / "vectors.npy")
    queries = np.load(tmp_path / "queries.npy")
    truth = np.load(tmp_path / "truth.npy")
    for query, row in zip(queries, truth, strict=True):
        assert row.tolist() == np.argsort(-(vectors @ query), kind="stable")[:10].tolist()
    assert len(json.loads((tmp_path / "texts.json").read_text())) == 3000


def test_gpt4all_weighs_bm25_by_whether_the_whole_question_matched_and_by_its_length():
    assert peer_engines.gpt4all_bm25_weight("any words at all", True) == 0.9
    assert peer_engines.gpt4all_bm25_weight("violin", False) == 0.75
    assert peer_engines.gpt4all_bm25_weight("the violin and the garden", False) == pytest.approx(0.25 + 0.5 / 4)
    assert peer_engines.fts_queries('the "best" violin') == [
        ('"the ""best"" violin"', True),
        ('("""best""" OR "violin")', False),
    ]


def test_gpt4all_fusion_ranks_by_weighted_reciprocal_rank_and_keeps_dense_order_on_ties():
    dense = [1, 2, 3, 4]  # 4: a BM25 hit the k-NN lacked, scored and appended
    lexical = [4, 3]
    fused = peer_engines.rrf_fuse(dense, lexical, 0.9, k=4)
    assert fused[:2] == [4, 3]
    assert peer_engines.rrf_fuse(dense, [], 0.0, k=3) == [1, 2, 3]
