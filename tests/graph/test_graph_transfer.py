"""Agent export and import carry the knowledge graph: aliases, deletions, history and sources."""

from __future__ import annotations

import json

from memdesk.core.transfer.graph import export_graph
from memdesk.core.transfer.memdesk_json import export_agent, import_agent


def test_the_graph_survives_export_and_import(services, graph, extractor, agent_id, say, clock):
    say("My sister Ann lives in London.")
    say("Annie moved to Paris.", days_later=10)
    services.memory.archival.insert(agent_id, "The Louvre is a museum in Paris.")
    extractor.enqueue(agent_id)
    extractor.run_entities(agent_id)
    graph.merge(graph.find(agent_id, "Annie").id, graph.find(agent_id, "Ann").id)
    graph.delete_entity(graph.find(agent_id, "museum").id)
    graph.insert_fact(agent_id, "Ann", "likes", "chess", author="user")

    data = json.loads(json.dumps(export_agent(services, agent_id)))  # through a file's text
    copy = import_agent(services, data, name="copy")

    original, imported = export_graph(services.db, agent_id), export_graph(services.db, copy.id)

    def shape(g):
        names = {e["id"]: e["name"] for e in g["entities"]}
        return (
            sorted((e["name"], e["kind"], names.get(e["merged_into"]), e["deleted"]) for e in g["entities"]),
            sorted(
                (names[f["subject"]], f["relation"], names[f["object"]], f["valid_from"], f["valid_to"], f["author"])
                for f in g["facts"]
            ),
            len(g["mentions"]),
        )

    assert shape(imported) == shape(original)
    ann = graph.find(copy.id, "Annie")
    assert ann.name == "Ann" and ann.aliases == ("Annie",)
    assert graph.find(copy.id, "museum") is None  # still deleted
    sources = {f.source()[0] for f in graph.facts(ann.id) if f.source()}
    assert sources == {"message"}
    for _kind, source_id in (f.source() for f in graph.facts(ann.id) if f.source()):
        assert services.memory.recall.get(source_id).agent_id == copy.id
    louvre = graph.find(copy.id, "Louvre")
    assert graph.mentions(louvre.id)[0][0] == "passage"
    assert services.memory.archival.get(graph.mentions(louvre.id)[0][1]).agent_id == copy.id
    assert extractor.enqueue(copy.id) == 0  # imported sources are not extracted a second time


def test_an_export_without_a_graph_is_extracted_after_import(services, graph, extractor, agent_id, say):
    say("Bob works at Siemens.")
    data = export_agent(services, agent_id)
    del data["graph"]
    copy = import_agent(services, data, name="old file")
    assert extractor.enqueue(copy.id) == 1
    extractor.run_entities(copy.id)
    assert graph.find(copy.id, "Siemens") is not None


def test_an_alias_whose_name_the_entity_took_keeps_its_row(services, graph, agent_id):
    ann = graph.resolve(agent_id, "Ann", "person")
    graph.merge(graph.resolve(agent_id, "Annie", "person"), ann)
    graph.rename(ann, "Annie")  # the alias row gives its key up to the entity
    copy = import_agent(services, json.loads(json.dumps(export_agent(services, agent_id))), name="copy")
    rows = services.db.query(
        "SELECT name, merged_into IS NOT NULL FROM graph_entities WHERE agent_id = ? ORDER BY id", (copy.id,)
    )
    assert [tuple(r) for r in rows] == [("Annie", 0), ("Annie", 1)]
    assert graph.find(copy.id, "Annie").aliases == ("Annie",)
