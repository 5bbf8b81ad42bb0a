"""Export an agent, import it back, and read its conversation as Markdown."""

from __future__ import annotations

import json

import pytest

from memdesk.core.agent.conversation_view import conversation_entries, conversation_markdown
from memdesk.core.base.errors import AgentExistsError, ConfigError
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.transfer.memdesk_json import duplicate_agent, export_agent, import_agent


@pytest.fixture
def talked(make_agent, services):
    # A roomy window: the memory-pressure alert would add a step this script does not answer.
    runtime = ScriptedRuntime(context_window=32768)
    agent = make_agent("sam", runtime=runtime)
    runtime.enqueue(
        call("core_memory_append", "remember the name", heartbeat=True, label="human", content="Name: Ada"),
        say("Nice to meet you, Ada!", "greet"),
        call("archival_memory_insert", "store it", heartbeat=False, content="Ada likes **gardening** and tea."),
        say("Gardening, lovely."),
    )
    agent.send_user_message("Hi, I am Ada")
    agent.send_user_message("I like gardening")
    return agent


def test_round_trip_keeps_blocks_history_and_passages(services, talked):
    data = json.loads(json.dumps(export_agent(services, talked.id)))  # must survive a real JSON file
    assert data["format"] == "memdesk-agent"
    copy = import_agent(services, data)
    assert copy.name == "sam (2)"  # the original still exists
    original_blocks = {b.label: (b.value, b.limit, b.read_only) for b in services.memory.core.blocks(talked.id)}
    copied_blocks = {b.label: (b.value, b.limit, b.read_only) for b in services.memory.core.blocks(copy.id)}
    assert copied_blocks == original_blocks
    assert "Name: Ada" in copied_blocks["human"][0]
    before = [(m.kind, m.content, m.search_text) for m in services.memory.recall.all(talked.id)]
    after = [(m.kind, m.content, m.search_text) for m in services.memory.recall.all(copy.id)]
    assert after == before
    # function results still point at their own call after ids changed
    for message in services.memory.recall.all(copy.id):
        if message.step_id is not None:
            assert services.memory.recall.get(message.step_id).agent_id == copy.id
    hits = services.memory.archival.search(copy.id, "gardening tea").hits
    assert hits and "gardening" in hits[0].passage.text
    assert (
        services.memory.recall.search_text(copy.id, "Ada").total
        == services.memory.recall.search_text(talked.id, "Ada").total
    )


def test_import_with_taken_name_is_refused(services, talked):
    with pytest.raises(AgentExistsError):
        import_agent(services, export_agent(services, talked.id), name="sam")


def test_import_rejects_other_files(services):
    with pytest.raises(ConfigError):
        import_agent(services, {"format": "something-else"})
    with pytest.raises(ConfigError):
        import_agent(services, {"format": "memdesk-agent", "version": 99, "agent": {}})


def test_duplicate_is_independent(services, talked):
    copy = duplicate_agent(services, talked.id, "sam copy")
    services.memory.core.set_value(copy.id, "human", "changed")
    assert services.memory.core.get(talked.id, "human").value != "changed"


def test_context_boundary_survives(services, talked):
    messages = services.memory.recall.all(talked.id)
    services.agents.update(talked.id, context_start_id=messages[3].id, evicted_count=3, summary="Note: summary")
    copy = import_agent(services, export_agent(services, talked.id), name="evicted")
    copied = services.memory.recall.all(copy.id)
    record = services.agents.get(copy.id)
    assert record.context_start_id == copied[3].id
    assert (record.evicted_count, record.summary) == (3, "Note: summary")


def test_entries_and_markdown(services, talked):
    entries = conversation_entries(services.memory.recall.all(talked.id))
    kinds = [e.kind for e in entries]
    assert kinds[0] == "user" and "agent" in kinds and "call" in kinds and "thought" in kinds
    append = next(e for e in entries if e.function == "core_memory_append")
    assert append.ok and append.arguments["content"] == "Name: Ada"
    markdown = conversation_markdown(services.memory, talked.id)
    assert markdown.startswith("# Conversation with sam")
    assert "Hi, I am Ada" in markdown and "Nice to meet you, Ada!" in markdown
    assert "core_memory_append" not in markdown  # inner workings only on request
    detailed = conversation_markdown(services.memory, talked.id, include_details=True)
    assert "core_memory_append" in detailed and "*thinking:* greet" in detailed
