"""bench.privacy gathers issue 19's figures from its parts and judges them against the issue's goals."""

from __future__ import annotations

from bench import privacy


def test_goals_are_judged_by_the_issue_s_bounds():
    met = privacy.goals_met(
        {
            "open_time_ratio": 1.1,
            "search_p50_ratio": 1.2,
            "ingest_throughput_ratio": 0.9,
            "timer_lateness_p99_ms": 31.0,
            "residual_occurrences": 0,
            "unrelated": 5,
        }
    )
    assert met == {
        "open_time_ratio": True,
        "search_p50_ratio": False,
        "ingest_throughput_ratio": True,
        "timer_lateness_p99_ms": False,
        "residual_occurrences": True,
    }


def test_a_figure_a_part_did_not_report_is_not_judged():
    assert privacy.goals_met({}) == {}
