"""MemDesk -> Letta agent file (.af) -> MemDesk keeps everything; the file has Letta's shape."""

from __future__ import annotations

import json
import re

import pytest

from memdesk.core.memory.revert import Reverter
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.tools.imported import ImportedTools
from memdesk.core.transfer.agentfile import EXTENSION_KEY, export_agent_file, import_agent_file, parse_agent_file
from memdesk.core.transfer.agentfile.graph import GraphFileTransfer

TOOL_CODE = (
    'def roll(sides: int) -> str:\n    """Roll a die.\n\n'
    '    Args:\n        sides: How many sides.\n    """\n    return "4"\n'
)


@pytest.fixture
def lived(services, make_agent, clock, tmp_path):
    """An agent with a past: a conversation with edits, an archive, a document, an eviction, an
    undo, an imported tool and a message with an author."""
    runtime = ScriptedRuntime(context_window=32768)
    agent = make_agent("sam", runtime=runtime, human="Name: Ada")
    runtime.enqueue(
        call("core_memory_append", "remember the tea", True, label="human", content="Likes tea"),
        say("Noted, Ada!", "greet"),
        call("archival_memory_insert", "store it", False, content="Ada grows tomatoes on her balcony."),
        "this is not JSON at all",  # a model's broken output is part of the history too
        say("Sorry, I meant: tomatoes!"),
    )
    agent.send_user_message("Hi, I like tea")
    clock.advance(minutes=5)
    agent.send_user_message("I grow tomatoes")
    core = services.memory.core
    core.set_value(agent.id, "persona", "I am Sam, a patient gardener.")
    Reverter(core.history, core, services.memory.archival).undo_last(agent.id, label="persona")
    core.create(agent.id, "projects", "Balcony garden", limit=400, description="What Ada is building", read_only=True)
    services.memory.recall.add(
        agent.id,
        role="user",
        kind="user_message",
        content='{"type": "user_message", "message": "hello"}',
        created_at=clock.now(),
        search_text="hello",
        author="Bob",
    )
    note = tmp_path / "garden.md"
    note.write_text("# Garden\n\nTomatoes need sun. Basil likes water.\n", encoding="utf-8")
    services.ingestor().ingest([note], agent.id)
    messages = services.memory.recall.all(agent.id)
    services.agents.update(
        agent.id,
        context_start_id=messages[4].id,
        evicted_count=4,
        summary="Note: Ada said hi and likes tea.",
        # Options MemDesk owns travel; a confirmation and unknown keys do not (test_imported_options.py).
        config={"retention_days": 30, "retention_confirmed": False},
    )
    said = next(m for m in services.memory.recall.all(agent.id) if m.kind == "user_message")
    lived_graph(services, agent.id, said.id, clock)
    ImportedTools(services.db, clock).add(
        agent.id,
        name="roll",
        description="Roll a die.",
        source_code=TOOL_CODE,
        json_schema={
            "name": "roll",
            "parameters": {"type": "object", "properties": {"sides": {"type": "integer"}}, "required": ["sides"]},
        },
        origin="letta",
        original={},
    )
    return agent


def lived_graph(services, agent_id, said, clock):
    """A knowledge graph with a past: a closed fact, a merge, a rename onto an alias's name, a
    deleted entity, a deleted and restored fact, a mention in a passage, and reverts of each kind."""
    m = services.memory
    graph = m.graph
    reverter = Reverter(m.core.history, m.core, m.archival, graph)
    graph.insert_fact(agent_id, "Ada", "grows", "tomatoes", author="user", message_id=said)
    ada = graph.find(agent_id, "Ada").id
    london, paris = graph.resolve(agent_id, "London", "place"), graph.resolve(agent_id, "Paris", "place")
    graph.add_fact(agent_id, ada, "lives in", london, author="extractor", message_id=said)
    clock.advance(days=1)
    graph.add_fact(agent_id, ada, "lives in", paris, author="extractor", message_id=said)  # closes London
    graph.merge(graph.resolve(agent_id, "Addie", "person"), ada)
    graph.rename(ada, "Addie")  # the alias row gives its key up
    graph.delete_entity(graph.resolve(agent_id, "Tom", "person"))
    chess, _edit = graph.insert_fact(agent_id, "Addie", "likes", "chess", author="agent")
    graph.delete_fact(chess.id)
    reverter.undo_last_of(agent_id, ("graph_fact", "graph_entity"))  # the fact comes back
    passage = m.archival.stored(agent_id, limit=1)[0][0]
    graph.add_mention(agent_id, paris, at=clock.now(), passage_id=passage)


def portable(services, agent_id, meta, index):
    """A graph change's rows in store-independent terms: entities by key, facts by what they say,
    messages by position. A row id that is not this agent's fails the comparison."""
    if not meta:
        return meta
    db = services.db

    def entity(entity_id):
        row = db.query_one("SELECT key, agent_id FROM graph_entities WHERE id = ?", (entity_id,))
        return row[0] if row and row[1] == agent_id else ("not this agent's", entity_id)

    def fact(fact_id):
        row = db.query_one(
            "SELECT subject_id, relation, object_id, valid_from, agent_id FROM graph_facts WHERE id = ?", (fact_id,)
        )
        return (
            (entity(row[0]), row[1], entity(row[2]), row[3])
            if row and row[4] == agent_id
            else ("not this agent's", fact_id)
        )

    rows = []
    for table, row_id, row in meta["rows"]:
        ref = entity(row_id) if table == "graph_entities" else fact(row_id)
        if row is not None:
            row = dict(row)
            assert row.pop("agent_id") == agent_id and row.pop("id") == row_id
            for column in ("subject_id", "object_id", "merged_into"):
                if row.get(column) is not None:
                    row[column] = entity(row[column])
            if row.get("message_id") is not None:
                row["message_id"] = index.get(row["message_id"], "not this agent's")
            row = sorted(row.items(), key=lambda item: item[0])
        rows.append((table, ref, row))
    return rows


def snapshot(services, agent_id):
    """Everything an agent is, without store ids."""
    m = services.memory
    record = services.agents.get(agent_id)
    messages = m.recall.all(agent_id)
    index = {message.id: i for i, message in enumerate(messages)}
    passages = [p for _id, p in m.archival.stored(agent_id, limit=10_000)]
    documents = services.db.query(
        "SELECT path, title, content_hash, size_bytes, mime, chunk_count FROM documents WHERE agent_id = ?", (agent_id,)
    )
    history = [
        (
            c.kind,
            c.label,
            c.action,
            c.before,
            c.after,
            portable(services, agent_id, c.before_meta, index) if c.kind.startswith("graph") else c.before_meta,
            portable(services, agent_id, c.after_meta, index) if c.kind.startswith("graph") else c.after_meta,
            c.source,
            c.at,
            c.note,
            c.reverts is not None,
            index.get(c.message_id),
            index.get(c.step_id),
            c.target_id is not None if c.kind != "document" else None,
        )
        for c in reversed(m.core.history.for_agent(agent_id, limit=10_000))
        if c.source != "import"
    ]
    passage_index = {passage_id: i for i, (passage_id, _p) in enumerate(m.archival.stored(agent_id, limit=10_000))}
    db = services.db
    entities = db.query(
        "SELECT e.name, e.key, e.kind, r.key, e.author, e.created_at, e.deleted FROM graph_entities e"
        " LEFT JOIN graph_entities r ON r.id = e.merged_into WHERE e.agent_id = ? ORDER BY e.key",
        (agent_id,),
    )
    facts = db.query(
        "SELECT s.key, f.relation, o.key, f.message_id, f.passage_id, f.valid_from, f.valid_to, f.author,"
        " f.created_at, f.deleted"
        " FROM graph_facts f JOIN graph_entities s ON s.id = f.subject_id JOIN graph_entities o ON o.id = f.object_id"
        " WHERE f.agent_id = ?",
        (agent_id,),
    )
    mentions = db.query(
        "SELECT e.key, m.message_id, m.passage_id, m.at FROM graph_mentions m JOIN graph_entities e"
        " ON e.id = m.entity_id WHERE m.agent_id = ?",
        (agent_id,),
    )
    return {
        "agent": (
            record.system_prompt,
            record.summary,
            record.evicted_count,
            record.config,
            record.created_at,
            index.get(record.context_start_id),
        ),
        "blocks": [(b.label, b.value, b.limit, b.description, b.read_only) for b in m.core.blocks(agent_id)],
        "messages": [
            (x.role, x.kind, x.content, x.search_text, x.author, x.function_name, x.created_at, index.get(x.step_id))
            for x in messages
        ],
        "passages": [
            (
                p.text,
                p.created_at,
                p.tags,
                p.chunk_index,
                p.page,
                p.section,
                p.char_start,
                p.char_end,
                p.document_id is not None,
            )
            for p in passages
        ],
        "documents": documents,
        "history": history,
        "tools": [
            (t.name, t.description, t.source_code, t.json_schema, t.enabled)
            for t in ImportedTools(services.db, services.clock).list(agent_id)
        ],
        "graph": sorted(
            (f.subject, f.relation, f.object, index.get(f.message_id) if f.message_id else None, f.author, f.valid_from)
            for f in services.memory.graph.all_facts(agent_id)
        ),
        "graph_entities": [tuple(r) for r in entities],
        "graph_facts": sorted(
            (s_, r, o, index.get(msg), passage_index.get(pas), *rest) for s_, r, o, msg, pas, *rest in facts
        ),
        "graph_mentions": sorted((k, index.get(msg), passage_index.get(pas), at) for k, msg, pas, at in mentions),
    }


def test_round_trip_is_lossless(services, lived):
    graph = GraphFileTransfer()
    document = json.loads(json.dumps(export_agent_file(services, [lived.id], graph=graph)))  # through a real JSON file
    summary = import_agent_file(services, document, graph=graph)
    copy = summary.agents[0]
    assert copy.name == "sam (2)" and summary.unmapped == []
    before, after = snapshot(services, lived.id), snapshot(services, copy.agent_id)
    for part in before:
        assert after[part] == before[part], part
    assert len(before["history"]) >= 6 and before["passages"] and before["documents"] and before["graph"]
    assert copy.graph == "7 knowledge-graph entities"
    assert any(e[3] is not None for e in before["graph_entities"]) and any(
        f[6] for f in before["graph_facts"]
    )  # an alias, a closed fact
    assert sum(1 for h in before["history"] if h[0].startswith("graph") and h[13]) >= 10  # revertible in the copy too
    assert any(entry[10] for entry in after["history"])  # the undo is still an undo
    # The copy's search works: its passages were embedded again.
    hits = services.memory.archival.search(copy.agent_id, "tomatoes balcony").hits
    assert hits and "tomatoes" in hits[0].passage.text


def test_exporting_the_copy_gives_the_same_file(services, lived):
    graph = GraphFileTransfer()
    first = export_agent_file(services, [lived.id], graph=graph)
    copy = import_agent_file(services, json.loads(json.dumps(first)), name="twin", graph=graph).agents[0]
    second = export_agent_file(services, [copy.agent_id], graph=graph)
    for document in (first, second):
        document.pop("created_at")
        document["agents"][0].pop("name")
        extension = document[EXTENSION_KEY]["agents"]["agent-0"]
        extension["history"] = [h for h in extension["history"] if h["source"] != "import"]
        for h in extension["history"]:
            h["reverts"] = h["reverts"] is not None  # positions shift by the import's own entries
        # Store ids differ between the two stores: compare entities by key, facts by position.
        keys = {e["id"]: re.sub(r" #\d+$", "", e["key"]) for e in extension["graph"]["entities"]}
        for entity in extension["graph"]["entities"]:
            entity.pop("id")
            entity["key"] = keys.get(entity.get("merged_into"), None), re.sub(r" #\d+$", "", entity["key"])
            entity.pop("merged_into")
        for row in extension["graph"]["mentions"] + extension["graph"]["facts"]:
            row.pop("id", None)
            for key in ("entity", "subject", "object"):
                row[key] = keys.get(row.get(key), row.get(key))
        for h in extension["history"]:
            if h.get("graph_target") is not None:
                h["graph_target"] = keys.get(h["graph_target"], "fact") if h["kind"] == "graph_entity" else "fact"
                for meta in ("before_meta", "after_meta"):
                    for item in h[meta]["rows"]:
                        item[1] = keys.get(item[1]) if item[0] == "graph_entities" else "fact"
                        if item[2] is not None:
                            for column in ("id", "agent_id", "key"):
                                item[2].pop(column, None)
                            for column in ("subject_id", "object_id", "merged_into"):
                                if item[2].get(column) is not None:
                                    item[2][column] = keys[item[2][column]]
    assert json.dumps(second, sort_keys=True) == json.dumps(first, sort_keys=True)


def test_the_file_has_letta_agentfileschema_shape(services, lived, agentfiles):
    document = export_agent_file(services, [lived.id])
    letta, _ = parse_agent_file((agentfiles / "deep_research_agent.af").read_bytes())
    assert set(letta) - {"metadata"} <= set(document)
    assert set(letta["agents"][0]) <= set(document["agents"][0])
    assert set(letta["blocks"][0]) <= set(document["blocks"][0])
    assert set(letta["tools"][0]) <= set(document["tools"][0])
    assert set(letta["agents"][0]["messages"][0]) <= set(document["agents"][0]["messages"][0])
    # Letta checks ids: "<prefix>-<integer>", unique across the file.
    agent = document["agents"][0]
    ids = (
        [agent["id"]]
        + [b["id"] for b in document["blocks"]]
        + [t["id"] for t in document["tools"]]
        + [m["id"] for m in agent["messages"]]
    )
    assert len(ids) == len(set(ids))
    for entity_id in ids:
        assert re.fullmatch(r"(agent|block|tool|message)-\d+", entity_id), entity_id
    messages = {m["id"]: m for m in agent["messages"]}
    assert set(agent["in_context_message_ids"]) <= set(messages) and agent["in_context_message_ids"][0] == "message-0"
    assert (
        messages["message-0"]["role"] == "system"
        and messages["message-0"]["content"][0]["text"] == lived.record.system_prompt
    )
    assert {m["role"] for m in agent["messages"]} <= {"system", "user", "assistant", "tool"}
    calls = {c["id"]: c["function"]["name"] for m in agent["messages"] for c in (m["tool_calls"] or [])}
    results = [m for m in agent["messages"] if m["role"] == "tool"]
    assert results and all(calls[r["tool_call_id"]] == r["name"] for r in results)
    append = next(
        m
        for m in agent["messages"]
        if m["tool_calls"] and m["tool_calls"][0]["function"]["name"] == "core_memory_append"
    )
    assert json.loads(append["tool_calls"][0]["function"]["arguments"])["content"] == "Likes tea"
    assert append["content"][0] == {
        "type": "reasoning",
        "is_native": False,
        "reasoning": "remember the tea",
        "signature": None,
    }
    blocks = {b["label"]: b for b in document["blocks"]}
    assert (blocks["projects"]["value"], blocks["projects"]["limit"], blocks["projects"]["read_only"]) == (
        "Balcony garden",
        400,
        True,
    )
    tools = {t["name"]: t for t in document["tools"]}
    assert tools["roll"]["source_code"] == TOOL_CODE and tools["send_message"]["tool_type"] == "letta_core"
    assert agent["llm_config"] is None or agent["llm_config"]["model_endpoint_type"] == "llamacpp"
    assert document[EXTENSION_KEY]["format"] == "memdesk-agent-file-extension"


def test_a_letta_agent_goes_back_out_with_what_memdesk_did_not_use(services, agentfiles):
    data, fixups = parse_agent_file((agentfiles / "deep_research_agent.af").read_bytes())
    imported = import_agent_file(services, data, fixups=fixups).agents[0]
    again = export_agent_file(services, [imported.agent_id])["agents"][0]
    original = data["agents"][0]
    for key in (
        "llm_config",
        "embedding_config",
        "tool_rules",
        "agent_type",
        "description",
        "max_files_open",
        "timezone",
    ):
        assert again[key] == original[key], key
    blocks = {b["label"]: (b["value"], b["limit"], b["read_only"], b["description"]) for b in data["blocks"]}
    out = export_agent_file(services, [imported.agent_id])
    assert {b["label"]: (b["value"], b["limit"], b["read_only"], b["description"]) for b in out["blocks"]} == blocks
    exported_tools = {t["name"]: t for t in out["tools"]}
    for tool in data["tools"]:
        if tool["tool_type"] == "custom":
            assert exported_tools[tool["name"]]["source_code"] == tool["source_code"]


def test_the_graph_travels_in_the_extension_and_its_changes_stay_revertible_in_the_copy(services, lived):
    graph_transfer = GraphFileTransfer()
    document = json.loads(json.dumps(export_agent_file(services, [lived.id], graph=graph_transfer)))
    letta_part = json.dumps({key: value for key, value in document.items() if key != EXTENSION_KEY})
    assert "London" not in letta_part and "graph_facts" not in letta_part  # Letta reads none of it
    extension = document[EXTENSION_KEY]["agents"]["agent-0"]
    assert {"entities", "mentions", "facts"} <= set(extension["graph"])
    copy_id = import_agent_file(services, document, graph=graph_transfer).agents[0].agent_id
    m = services.memory
    graph = m.graph
    rename = next(
        c for c in m.core.history.for_agent(copy_id, kind="graph_entity") if c.before == "Ada" and c.after == "Addie"
    )
    Reverter(m.core.history, m.core, m.archival, graph).revert(rename.id)
    ada = graph.find(copy_id, "Ada")
    assert (ada.name, ada.aliases) == ("Ada", ("Addie",))  # the copy's entity is called Ada again, Addie its alias ...
    assert (
        graph.find(lived.id, "Ada") is None and graph.find(lived.id, "Addie").name == "Addie"
    )  # ... the original is untouched
