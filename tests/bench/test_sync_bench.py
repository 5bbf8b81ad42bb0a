"""A tiny run of the sync benchmark, so the script cannot rot (the figures come from
`python -m bench.sync --json`; no timing is asserted here)."""

from __future__ import annotations

from bench import sync


def test_the_benchmark_reports_every_figure_in_the_issues_words():
    report = sync.measure(messages=200, edits=20, converge_changes=50)
    for key in ("bytes_per_change_over_row_bytes", "apply_over_local_write", "capture_over_no_sync"):
        assert report[key] > 0
    assert set(report["apply_changes_per_s"]) == {"messages", "block_edits"}
    assert report["converge_s"] is not None, "syncthing is not installed: `make system-deps` installs it"
    assert report["converge_s"] >= 0
