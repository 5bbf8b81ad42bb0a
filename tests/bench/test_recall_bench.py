"""A small run of the automatic-recall latency benchmark, so the script itself cannot rot (the
figures come from `python -m bench.recall --messages 10000 --json`; no timing is asserted here)."""

from __future__ import annotations

import pytest

from bench import recall


@pytest.mark.model
def test_the_benchmark_reports_latency_against_the_deadline(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMDESK_HOME", str(tmp_path / "home"))
    report = recall.run(messages=300, queries=3, timeout_ms=300)
    assert report["messages"] == 300 and report["queries"] == 3 and report["timeout_ms"] == 300
    for key in ("search_ms_p50", "search_ms_p95", "support_ms_p50", "gather_ms_p50", "gather_ms_p95"):
        assert report[key] > 0
    assert report["search_ms_p95"] >= report["search_ms_p50"]
    assert report["timeouts"] + report["failures"] <= 3 and report["failures"] == 0
    assert report["memories_placed_p50"] >= 1  # the questions find something in 300 turns of the data
