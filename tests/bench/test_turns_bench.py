"""A one-turn run of the turns benchmark on the real bundled model, so the script cannot rot (the
figures come from `python -m bench.turns --json`; no timing is asserted here)."""

from __future__ import annotations

import pytest

from bench import turns


@pytest.mark.model
def test_the_benchmark_reports_each_turns_steps_and_the_kv_reuse(memdesk_home):
    report = turns.run(1, "hashing", seed=1)
    assert report["turns"] == 1 and len(report["rows"]) == 1 and report["load_seconds"] > 0
    row = report["rows"][0]
    assert row["steps"] == len(row["functions"]) >= 1 and row["prompt_tokens"] >= row["evaluated_tokens"] > 0
    assert report["steps"] == row["steps"] and 0 <= report["valid_json_rate"] <= 1
    assert {"reeval_ratio", "reeval_ratio_after_edit", "evictions", "model"} <= set(report)
