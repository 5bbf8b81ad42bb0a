"""A tiny run of the backup benchmark, so the script itself cannot rot (the figures come from
`python -m bench.privacy_backup --json`; no timing is asserted here)."""

from __future__ import annotations

from bench import privacy_backup


def test_the_benchmark_reports_backup_time_and_timer_lateness(tmp_path, qapp):
    report = privacy_backup.measure(megabytes=2, folder=tmp_path)
    assert report["store_bytes"] >= 2_000_000 and report["messages"] > 0
    assert report["backup_seconds"] > 0 and report["backup_seconds_1gb"] > report["backup_seconds"]
    assert report["timer_lateness_p99_ms"] >= 0 and report["timer_lateness_p99_ms_idle"] >= 0
    assert report["timer_lateness_goal_ms"] == 30.0
    assert list(tmp_path.iterdir()) == []  # the store and its snapshot were removed
