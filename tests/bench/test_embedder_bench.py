"""A tiny run of the embedder benchmark, so the script cannot rot (the figures come from
`python -m bench.embedder --json`; no timing is asserted here)."""

from __future__ import annotations

import pytest

from bench import embedder


@pytest.mark.embedder
def test_the_benchmark_compares_the_app_s_embedder_with_torch_s_at_a_small_size():
    report = embedder.run(rounds=1, scale=0.05)
    for name in ("messages", "chunks_10_sentences", "chunks_window_sized", "queries_one_at_a_time"):
        assert report[name]["texts"] > 0 and report[name]["numpy_over_torch"] > 0
    assert report["min_cosine"] >= 0.9999  # the same vectors, on every text measured
    for who in ("torch", "numpy"):
        assert report["start_and_memory"][who]["peak_rss_mb_after_batch"] > 0
