"""A tiny run of the private-chat start benchmark, so the script cannot rot (the figures come from
`python -m bench.privacy_private --json`; no timing is asserted here)."""

from __future__ import annotations

from bench import privacy_private


def test_the_benchmark_reports_the_copy_against_reading_the_file():
    report = privacy_private.measure((1,), repeats=1)
    assert report["private_chat_start_1MB_bytes"] >= 1_000_000
    assert report["private_chat_start_1MB_messages"] > 0
    assert report["private_chat_start_1MB_copy_s"] > 0 and report["private_chat_start_1MB_read_s"] > 0
    assert report["private_chat_start_1MB_ratio"] > 0
