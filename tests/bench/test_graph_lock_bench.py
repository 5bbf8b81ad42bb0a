"""A tiny run of the graph catch-up's write-lock benchmark, so the script itself cannot rot (the
figures come from `python -m bench.graph_lock --messages 400 --json`; no timing is asserted here)."""

from __future__ import annotations

from bench import graph_lock


def test_the_benchmark_reports_the_catch_ups_write_locks_and_another_writers_wait(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMDESK_HOME", str(tmp_path / "home"))
    report = graph_lock.run(12, real_embedder=False)
    assert report["messages"] == 12 and report["transactions"] >= 12  # at least one per source
    assert report["longest_write_lock_ms"] >= report["write_lock_p95_ms"] > 0
    assert report["other_writer_writes"] >= 0 and report["share_of_busy_timeout"] >= 0
