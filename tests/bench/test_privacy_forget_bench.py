"""A tiny run of the forget benchmark, so the script cannot rot (the figures come from
`python -m bench.privacy_forget --json`; no timing is asserted here)."""

from __future__ import annotations

from bench import privacy_forget


def test_the_benchmark_forgets_the_name_and_counts_what_is_left():
    report = privacy_forget.measure(messages=400)
    assert report["messages"] == 400 and report["messages_naming"] > 0
    assert report["messages_forgotten"] == report["messages_naming"] == report["previewed_messages"]
    assert report["occurrences_before"] > report["messages_naming"]  # FTS and the WAL hold copies too
    assert report["residual_occurrences"] == 0 and report["wal_emptied"]
    assert report["forget_seconds"] > 0 and report["forget_seconds_100k"] is None


def test_residual_occurrences_counts_the_name_in_any_case_and_utf16():
    data = b"xx ottoline " + "OTTOLINE".encode("utf-16-le") + "Ottoline".encode("utf-16-be")
    assert privacy_forget.residual_occurrences(data) == 3
