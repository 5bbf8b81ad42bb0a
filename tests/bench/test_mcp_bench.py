"""A tiny run of the MCP benchmark, the window's part included, so the script cannot rot (the
figures come from `python -m bench.mcp --json`; no timing is asserted here)."""

from __future__ import annotations

from bench import mcp

KEYS = (
    "mcp_search_over_inprocess_p50",
    "mcp_session_start_s",
    "ui_timer_lateness_p99_ms",
    "ui_timer_lateness_idle_p99_ms",
    "load_1m",
)


def test_the_benchmark_reports_the_issues_figures_measured_through_a_real_server():
    report = mcp.run(n=1500, count=3, starts=1, window_seconds=2)
    assert all(key in report for key in KEYS)
    assert report["n_messages"] == 1500 and report["queries"] == 3
    assert report["mcp_search_over_inprocess_p50"] > 0 and report["mcp_session_start_s"] > 0
    assert report["ui_timer_lateness_p99_ms"] is not None and report["ui_searches_answered"] > 0
