"""A tiny run of the screenshot script, so it cannot rot: the same driver the real run uses
(`python -m bench.screenshots`, the bundled model under Xvfb), here offscreen on the scripted
runtime, must send each message after the previous reply and save the four pictures."""

from __future__ import annotations

from PySide6.QtGui import QImage

from bench import screenshots
from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime, say


def test_the_script_answers_each_message_then_saves_the_four_pictures(qapp, tmp_path):
    # The scripted model answers the two messages only: the knowledge graph's facts between turns
    # took the second answer in one run (the real run keeps them; entities need no model).
    with open_services(Paths.from_environment(), embedder=HashingEmbedder()) as services:
        services.settings_store.set("graph_model_facts", False)
    runtime = ScriptedRuntime(context_window=32768)
    runtime.enqueue(say("Hello Ada! Lisbon gardens must be lovely."), say("How nice that Ann teaches music in Porto."))
    report = screenshots.capture(
        tmp_path / "shots",
        make_runtime=lambda _settings: runtime,
        embedder=HashingEmbedder(),
        graph_wait_s=3,
        give_up_s=120,
    )
    assert report.get("errors") is None
    assert report["model"] and report["replies"] == [
        "Hello Ada! Lisbon gardens must be lovely.",
        "How nice that Ann teaches music in Porto.",
    ]
    assert set(report["files"]) == set(screenshots.SHOTS)
    for path in report["files"].values():
        assert not QImage(path).isNull()
    assert (
        report["history_change"] == "user updated human"
    )  # the scripted agent changed no block: the user's edit is shown
