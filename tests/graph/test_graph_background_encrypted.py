"""Extraction on its own thread opens its own connection: on an encrypted store it gets the key."""

from __future__ import annotations

import pytest

from memdesk.app.services import open_services
from memdesk.app.sessions import graph_extraction
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.session.listener import SessionListener
from tests.graph.test_graph_background import wait_for


@pytest.fixture
def services(memdesk_home, clock):
    """The graph fixtures' store, encrypted."""
    services = open_services(Paths.from_environment(), key="secret", embedder=HashingEmbedder(), clock=clock)
    yield services
    services.close()


def test_the_extraction_thread_opens_an_encrypted_store_with_its_key(services, graph, analyser, clock, agent_id, say):
    assert services.key == "secret"
    worker = graph_extraction(services, lambda: analyser, SessionListener())
    worker.start()
    try:
        say("My brother Tom lives in Lisbon.")
        worker.nudge(agent_id)
        assert wait_for(lambda: graph.find(agent_id, "Tom") is not None)
    finally:
        worker.close()
