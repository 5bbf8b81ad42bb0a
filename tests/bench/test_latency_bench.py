"""A tiny run of the latency benchmark on the real bundled model, so the script cannot rot (the
figures come from `python -m bench.latency --json`; no timing is asserted here)."""

from __future__ import annotations

import pytest

from bench import latency


@pytest.mark.model
def test_the_benchmark_says_where_the_tokens_before_each_reply_went(tmp_path):
    report = latency.run(turns=2, embedder_name="hashing", seed=1, home=str(tmp_path / "home"))
    assert report["turns"] == 2 and len(report["rows"]) == 2
    for row in report["rows"]:
        assert row["steps"] >= 1 and len(row["functions"]) == row["steps"]
        split = row["tokens_before_reply"]
        if split is not None:  # a turn with a reply
            assert split["total"] == split["inner_thoughts"] + split["arguments"] + split["structure"] > 0
    assert sum(report["step_functions"].values()) == sum(row["steps"] for row in report["rows"])
    assert set(report["targets"]) == set(report["targets_met"]) >= {"tokens_before_reply_p50", "steps_per_turn_p50"}
    assert report["machine"]["cores"] >= 1 and len(report["machine"]["load_average_1min"]) == 2
