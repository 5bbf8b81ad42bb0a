"""Fact extraction by the real bundled model, under the entity grammar, through llama.cpp in its
child process, after a real agent turn (the extraction prompt extends the agent's own)."""

from __future__ import annotations

import pytest

from memdesk.app.agents import open_agent
from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.graph.extraction import ExtractionOptions, GraphExtractor
from memdesk.core.graph.model_facts import ModelFactExtractor
from memdesk.core.tools.context import AllowAll

pytestmark = pytest.mark.model


@pytest.fixture
def real_runtime(bundled_runtime):
    return bundled_runtime


def test_the_model_adds_a_fact_between_entities_it_was_given(real_runtime, analyser, clock):
    from memdesk.core.embedding.hashing import HashingEmbedder

    services = open_services(Paths.from_environment(), embedder=HashingEmbedder(), clock=clock)
    try:
        record = services.create_agent("ana")
        agent = open_agent(
            services,
            record,
            real_runtime,
            consent=AllowAll(),
            settings=Settings(max_answer_tokens=96, max_chained_steps=2),
        )
        agent.send_user_message("My sister Ann moved to Lisbon last spring. She works at a bakery there.")
        extractor = GraphExtractor(services.memory.graph, analyser, clock, ExtractionOptions(model_facts=True))
        extractor.enqueue(record.id)
        extractor.run_entities(record.id)
        assert extractor.pending(record.id, "facts") == 1
        prefix = agent.prompt_prefix()
        report = extractor.run_facts(ModelFactExtractor(real_runtime), record.id, prefix=lambda _agent: prefix)
        assert report.failed == 0 and report.sources == 1 and extractor.pending(record.id) == 0
        assert report.model_facts >= 1
        known = {"User", "Ann", "Lisbon", "sister", "bakery"}
        graph = services.memory.graph
        facts = graph.all_facts(record.id)
        assert facts and all({f.subject, f.object} <= known for f in facts)  # the grammar allowed no other node
        assert all(f.relation and f.source() == ("message", facts[0].message_id) for f in facts)
    finally:
        services.close()
