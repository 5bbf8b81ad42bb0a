"""Extraction on its own thread (memdesk.session.graph_extraction, for every front end): a nudge
after a message fills the graph."""

from __future__ import annotations

import time

from memdesk.app.sessions import graph_extraction
from memdesk.session.listener import SessionListener


def wait_for(condition, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_nudge_extracts_in_the_background(services, graph, analyser, clock, agent_id, say):
    worker = graph_extraction(services, lambda: analyser, SessionListener())
    worker.start()
    try:
        say("My brother Tom lives in Lisbon.")
        worker.nudge(agent_id)
        assert wait_for(lambda: graph.find(agent_id, "Tom") is not None)
        services.settings_store.set("graph_extraction", False)
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
    worker = graph_extraction(services, lambda: analyser, SessionListener())
    worker.start()
    try:
        said = say("My brother Tom lives in Lisbon.")
        worker.nudge(agent_id)
        assert wait_for(lambda: graph.find(agent_id, "Tom") is not None)
    finally:
        worker.close()
    created = {c.after: c for c in services.memory.core.history.for_agent(agent_id, kind="graph_entity")}
    assert (created["Tom"].source, created["Tom"].action, created["Tom"].message_id) == ("extractor", "create", said)
    assert services.memory.core.history.for_agent(agent_id, kind="graph_fact")[0].message_id == said
