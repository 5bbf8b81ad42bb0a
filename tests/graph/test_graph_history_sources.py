"""The extractor's changes in the memory history say where they came from: the message (linked,
so the History view jumps to it) or the archival passage."""

from __future__ import annotations


def test_extracted_entities_and_facts_name_their_source(services, graph, extractor, agent_id, say):
    said = say("Bob works at Siemens.")
    passage = services.memory.archival.insert(agent_id, "Marie Curie worked in Paris.")[0]
    extractor.enqueue(agent_id)
    extractor.run_entities(agent_id)
    history = services.memory.core.history
    entities = {c.after: c for c in history.for_agent(agent_id, kind="graph_entity")}
    assert (entities["Bob"].source, entities["Bob"].message_id) == ("extractor", said)
    assert (
        entities["Marie Curie"].message_id is None
        and entities["Marie Curie"].note == f"found in archival passage {passage}"
    )
    facts = {c.after: c for c in history.for_agent(agent_id, kind="graph_fact")}
    assert facts["Bob work at Siemens"].message_id == said
