"""A tiny run of the encryption benchmark, so the script cannot rot (the figures come from
`python -m bench.privacy_encryption --json`; no timing is asserted here)."""

from __future__ import annotations

from bench import privacy_encryption


def test_the_benchmark_reports_each_ratio_of_encrypted_to_plain():
    report = privacy_encryption.measure(True, messages=200)
    for name in ("open_time_ratio", "search_p50_ratio", "ingest_throughput_ratio", "turn_time_ratio"):
        assert report[name] > 0 and name in report["targets_met"]
    assert report["encrypted_store_bytes"] > 0 and report["plain_store_bytes"] > 0
    assert report["ingest_passages"] > 0 and report["encrypted_first_open_s"] > 0
