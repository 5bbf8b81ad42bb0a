"""A tiny run of the history benchmark, so the script cannot rot (the figures come from
`python -m bench.history --json`; no timing is asserted here)."""

from __future__ import annotations

import pytest

from bench import history

KEYS = (
    "messages_per_s",
    "import_over_bare_parse_and_embed",
    "import_over_bare_parse_and_embed_cpu",
    "peak_rss_mb",
    "ui_timer_lateness_p99_ms",
    "folder_export_seconds",
    "folder_import_seconds",
    "load",
)


@pytest.mark.parametrize("together", [False, True], ids=["baseline-then-import", "baseline-beside-import"])
def test_the_benchmark_reports_the_issue_s_figures_at_a_small_size(together):
    # limit_s: a child (the import's, the window's) stuck or crashed ends the run within minutes
    report = history.run(megabytes=0.3, messages=300, embedder_name="hashing", limit_s=120, together=together)
    assert report["baseline_beside_import"] is together
    assert all(key in report for key in KEYS)
    assert report["messages"] == report["baseline_messages"] == report["written_messages"] > 0
    assert report["folder_messages"] == 300
    assert report["peak_rss_mb"] > 0 and report["import_over_bare_parse_and_embed"] > 0
    assert report["import_cpu_seconds"] > 0 and report["bare_parse_and_embed_cpu_seconds"] > 0
    # The window imported its export through File > Import history while its timer ticked.
    assert report["window_messages"] > 0 and report["ui_ticks"] > 0
    assert report["ui_timer_lateness_p99_ms"] >= 0 and report["ui_timer_lateness_p99_ms_idle"] >= 0
