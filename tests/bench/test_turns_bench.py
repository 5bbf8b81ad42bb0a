"""A two-turn run of the turns benchmark, so the script cannot rot (the figures come from
`python -m bench.turns --json` on the bundled model; here a scripted model answers, as in the
screenshot script's test, and no timing is asserted)."""

from __future__ import annotations

from bench import turns
from memdesk.core.runtime.scripted import ScriptedRuntime, say


def test_the_benchmark_reports_each_turns_steps_and_the_kv_reuse(memdesk_home):
    runtime = ScriptedRuntime([say("Hello Ann."), say("Lyon is lovely.")], context_window=32768)
    report = turns.run(2, "hashing", seed=1, make_runtime=lambda _settings: runtime)
    assert report["model"] == "scripted" and report["turns"] == 2 and report["load_seconds"] >= 0
    assert [row["functions"] for row in report["rows"]] == [["send_message"], ["send_message"]]
    assert [row["replies"] for row in report["rows"]] == [["Hello Ann."], ["Lyon is lovely."]]
    assert (
        report["steps"] == 2
        and report["valid_json_rate"] == report["ok_step_rate"] == 1.0
        and report["turns_with_reply"] == 2
    )
    # The scripted model evaluates every prompt token again: the second step's ratio is above 1.
    assert report["reeval_ratio"] > 1 and report["evictions"] == 0
    assert any("Likes hiking." in message.content for message in runtime.prompts[1])  # the user's edit, halfway
