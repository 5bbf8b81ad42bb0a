"""Graph fixtures: the real spaCy pipeline is loaded once per session (a couple of seconds)."""

from __future__ import annotations

import pytest

from memdesk.core.graph.extraction import ExtractionOptions, GraphExtractor


@pytest.fixture(scope="session")
def analyser():
    from memdesk.core.graph.nlp import SpacyAnalyser

    return SpacyAnalyser()


@pytest.fixture
def graph(services):
    return services.memory.graph


@pytest.fixture
def agent_id(services):
    return services.create_agent("sam").id


@pytest.fixture
def extractor(graph, analyser, clock):
    return GraphExtractor(graph, analyser, clock, ExtractionOptions(model_facts=False))


@pytest.fixture
def say(services, clock, agent_id):
    """Store a user message as the agent's loop would, and return its id."""

    def add(text: str, *, author: str | None = None, days_later: float = 0) -> int:
        clock.advance(days=days_later)
        with services.db.transaction():
            message = services.memory.recall.add(
                agent_id,
                role="user",
                kind="user_message",
                content=text,
                search_text=text,
                author=author,
                created_at=clock.now(),
            )
        return message.id

    return add
