"""A tiny run of the large-store window benchmark, so it cannot rot (the figures come from
`python -m bench.window_open --n 100000 --json`; no timing is asserted here)."""

from __future__ import annotations

from bench import window_open


def test_the_benchmark_opens_the_real_window_on_both_stores_and_reports_each_figure():
    report = window_open.run(n=300, watch_s=0.2)
    assert report["n_messages"] == 300 and report["usable"] is True
    # Only the newest page is read, however long the conversation.
    assert 0 < report["transcript_entries_loaded"] <= 101
    for key in (
        "open_to_usable_s",
        "open_to_usable_small_store_s",
        "open_to_usable_vs_small_store",
        "agent_opened_s",
        "event_loop_worst_stall_ms",
        "event_loop_worst_stall_small_store_ms",
    ):
        assert report[key] is not None and report[key] >= 0, key
