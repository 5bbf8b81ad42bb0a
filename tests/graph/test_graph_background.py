"""Extraction on a plain thread (the terminal chat): a nudge after a message fills the graph."""

from __future__ import annotations

import time

from memdesk.core.graph.extraction import ExtractionOptions
from memdesk.session.graph_extraction import BackgroundExtraction


def wait_for(condition, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_nudge_extracts_in_the_background(services, graph, analyser, clock, agent_id, say):
    enabled = {"on": True}
    worker = BackgroundExtraction(
        services.paths.database, lambda: analyser, clock, lambda: ExtractionOptions(enabled["on"])
    )
    try:
        say("My brother Tom lives in Lisbon.")
        worker.nudge(agent_id)
        assert wait_for(lambda: graph.find(agent_id, "Tom") is not None)
        enabled["on"] = False
        say("Carla works at Siemens.")
        worker.nudge(agent_id)
        assert wait_for(
            lambda: (
                services.db.scalar(
                    "SELECT last_id FROM graph_progress WHERE agent_id = ? AND source_kind = 'message'", (agent_id,)
                )
                == 2
            )
        )
        assert graph.find(agent_id, "Carla") is None  # off: passed over
    finally:
        worker.close()


def test_the_background_extractors_changes_are_in_the_memory_history(services, graph, analyser, clock, agent_id, say):
    from memdesk.app.services import memory_history

    worker = BackgroundExtraction(
        services.paths.database,
        lambda: analyser,
        clock,
        lambda: ExtractionOptions(True),
        recorder=lambda db: memory_history(db, clock),
    )
    try:
        said = say("My brother Tom lives in Lisbon.")
        worker.nudge(agent_id)
        assert wait_for(lambda: graph.find(agent_id, "Tom") is not None)
    finally:
        worker.close()
    created = {c.after: c for c in services.memory.core.history.for_agent(agent_id, kind="graph_entity")}
    assert (created["Tom"].source, created["Tom"].action, created["Tom"].message_id) == ("extractor", "create", said)
    assert services.memory.core.history.for_agent(agent_id, kind="graph_fact")[0].message_id == said
