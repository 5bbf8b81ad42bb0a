"""Conversation search expanded through the knowledge graph: a turn that shares no word with the
question but mentions an entity linked to one it names comes up."""

from __future__ import annotations

from memdesk.core.retrieval.graph_expansion import query_entities


def test_a_linked_entity_brings_its_turn_up(services, graph, extractor, agent_id, say):
    say("My sister Ann adopted Biscuit last week.")
    target = say("Biscuit chewed the sofa cushions again, what a rascal.")
    for filler in (
        "We watched a film about volcanoes.",
        "The train was late this morning.",
        "I tried a new pasta recipe tonight.",
    ):
        say(filler)
    extractor.enqueue(agent_id)
    extractor.run_entities(agent_id)
    recall = services.memory.recall
    question = "What did Ann's new pet do?"
    plain = [hit.id for hit in recall.rank(agent_id, question, dense=False, graph_weight=0.0)]
    expanded = [hit.id for hit in recall.rank(agent_id, question, dense=False, graph_weight=0.5)]
    assert target not in plain  # not a word in common
    assert target in expanded[:3]  # Ann -adopt-> Biscuit, which that turn mentions


def test_the_stores_searches_follow_the_expansion_setting_as_it_changes(services, graph, extractor, agent_id, say):
    say("My sister Ann adopted Biscuit last week.")
    target = say("Biscuit chewed the sofa cushions again, what a rascal.")
    say("We watched a film about volcanoes.")
    extractor.enqueue(agent_id)
    extractor.run_entities(agent_id)
    recall, question = services.memory.recall, "What did Ann's new pet do?"
    assert target in [hit.id for hit in recall.rank(agent_id, question, dense=False)][:3]  # on by default
    services.settings_store.set("graph_search_expansion", False)
    assert target not in [hit.id for hit in recall.rank(agent_id, question, dense=False)]


def test_query_entities_match_names_aliases_and_plurals(services, graph, agent_id):
    ann = graph.resolve(agent_id, "Ann Smith", "person")
    graph.resolve(agent_id, "Ann", "person")
    group = graph.resolve(agent_id, "support group", "concept")
    assert query_entities(services.db, agent_id, "Where did Ann go?") == {ann}
    assert query_entities(services.db, agent_id, "Which support groups did she join?") == {group}
    assert query_entities(services.db, agent_id, "nothing known here") == set()


def test_without_links_expansion_changes_nothing(services, graph, extractor, agent_id, say):
    for text in ("Ann likes tea.", "Bob likes coffee.", "The weather is grey."):
        say(text)
    extractor.enqueue(agent_id)
    extractor.run_entities(agent_id)
    recall = services.memory.recall
    question = "the weather today"
    assert [h.id for h in recall.rank(agent_id, question, dense=False)] == [
        h.id for h in recall.rank(agent_id, question, dense=False, graph_weight=0.5)
    ]
