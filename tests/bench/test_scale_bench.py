"""A tiny run of the scale benchmark, so the script cannot rot (the figures come from
`python -m bench.scale --n 1000000 --json`; no timing is asserted here)."""

from __future__ import annotations

from bench import scale

KEYS = (
    "search_p50_ms",
    "search_after_write_p50_ms",
    "write_penalty_ratio",
    "recall_at_10_vs_exact",
    "open_to_first_search_s",
    "index_rss_mb",
    "fts_p50_ms",
    "auto_recall_section_p95_ms",
    "ingest_ratio_1m_vs_empty",
    "store_mb_per_100k",
    "fts_common_word_p95_ms",
    "fts_common_word_unbounded_p50_ms",
    "fts_common_word_vs_unbounded",
    "auto_recall_section_common_word_p95_ms",
    "auto_recall_section_common_words_only_p95_ms",
    "auto_recall_section_common_word_unbounded_p95_ms",
)


def test_the_benchmark_reports_every_figure_of_the_issue_with_its_numpy_ratio():
    report = scale.run(n=1500, queries=3, ingest_chunks=64)
    assert all(key in report for key in KEYS)
    assert report["n"] == 1500 and report["queries"] == 3
    assert report["recall_at_10_vs_exact"] == 1.0  # at this size every vector is re-scored
    for key in (
        "search_p50_ms",
        "search_after_write_p50_ms",
        "fts_p50_ms",
        "auto_recall_section_p95_ms",
        "open_to_first_search_s",
        "fts_common_word_p95_ms",
        "fts_common_word_unbounded_p50_ms",
        "auto_recall_section_common_word_p95_ms",
        "auto_recall_section_common_words_only_p95_ms",
    ):
        assert report[key] > 0
    for key in ("search_p50_vs_numpy", "open_to_first_search_vs_numpy", "index_rss_vs_numpy", "fts_p50_vs_numpy"):
        assert key in report
    assert report["store_mb_per_100k"] > 0 and report["ingest_ratio_1m_vs_empty"] > 0
    # the section again with a knowledge graph over every message, searched as the app does by default
    assert report["graph_mentions"] >= 2 * 1500 and report["auto_recall_section_with_graph_p95_ms"] > 0
    assert len(report["load_average"]) == 3 and report["cpus"] >= 1
