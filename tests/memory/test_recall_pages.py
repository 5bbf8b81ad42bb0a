"""Recall memory read a page at a time, for a view of a long conversation (the window's transcript)."""

from __future__ import annotations

import json


def add(services, agent_id, kind, text, **extra):
    return services.memory.recall.add(
        agent_id,
        role="assistant" if kind != "user_message" else "user",
        kind=kind,
        content=text,
        search_text=text,
        created_at=services.clock.now(),
        **extra,
    )


def test_the_newest_page_comes_oldest_first_and_pages_go_back_without_gaps(services):
    agent = services.create_agent("sam")
    ids = [add(services, agent.id, "user_message", f"m{n}").id for n in range(25)]
    recall = services.memory.recall
    page = recall.newest(agent.id, 10)
    assert [m.id for m in page] == ids[-10:]
    older = recall.newest(agent.id, 10, before_id=page[0].id)
    assert [m.id for m in older] == ids[5:15]
    assert recall.any_before(agent.id, older[0].id) and not recall.any_before(agent.id, ids[0])
    assert [m.id for m in recall.between(agent.id, ids[2], ids[6])] == ids[2:6]


def test_a_page_never_begins_with_a_function_result_apart_from_its_call(services):
    agent = services.create_agent("sam")
    add(services, agent.id, "user_message", "find Lisbon")
    call = add(
        services,
        agent.id,
        "assistant_call",
        json.dumps({"function": "conversation_search", "params": {"query": "Lisbon"}}),
        function_name="conversation_search",
    )
    result = add(
        services, agent.id, "function_result", json.dumps({"status": "OK", "message": "1 hit"}), step_id=call.id
    )
    last = add(services, agent.id, "user_message", "thanks")
    page = services.memory.recall.newest(agent.id, 2)
    assert [m.id for m in page] == [call.id, result.id, last.id]
    assert [m.id for m in services.memory.recall.between(agent.id, result.id, last.id + 1)] == [
        call.id,
        result.id,
        last.id,
    ]


def test_the_message_that_started_a_chain_is_found_from_any_step_of_it(services):
    """The history panel names the user's message a heartbeat's change answers."""
    agent = services.create_agent("sam")
    add(services, agent.id, "user_message", "an older one")
    asked = add(services, agent.id, "user_message", "remember Lisbon")
    heartbeat = add(services, agent.id, "heartbeat", "continue")
    later = add(services, agent.id, "user_message", "a newer one")
    found = services.memory.recall.last_of_kind(agent.id, "user_message", heartbeat.id)
    assert (found.id, found.content, found.created_at) == (asked.id, asked.content, asked.created_at)
    assert services.memory.recall.last_of_kind(agent.id, "user_message", later.id).id == later.id
    assert services.memory.recall.last_of_kind(agent.id, "assistant_message", later.id) is None
