"""The prompt layout keeps the runtime's KV cache: the static part never changes, and a memory edit
(by the agent or by the user) appends to the prompt instead of rewriting it above the conversation."""

from __future__ import annotations

import json

from memdesk.core.agent.memory_view import REFRESH_AFTER
from memdesk.core.runtime.scripted import call, say


def is_prefix(earlier, later) -> bool:
    return later[: len(earlier)] == earlier


def test_static_prefix_is_the_system_message_and_never_changes(services, runtime, make_agent):
    agent = make_agent()
    prefix = agent.static_prefix()
    assert [m.role for m in prefix] == ["system"]
    assert "### Functions" in prefix[0].content and "### Memory" not in prefix[0].content
    runtime.enqueue(call("core_memory_append", "save", True, label="human", content="Name: Ada"), say("Hi Ada"))
    agent.send_user_message("I am Ada")
    services.memory.core.set_value(agent.id, "human", "Name: Ada Lovelace")
    assert agent.static_prefix() == prefix
    assert all(prompt[0] == prefix[0] for prompt in runtime.prompts)


def test_the_memory_prefix_a_warm_up_evaluates_is_how_every_step_of_a_new_agent_begins(services, runtime, make_agent):
    from memdesk.core.runtime.warmup import Warmup

    agent = make_agent()
    warmup = Warmup()
    warmup.start(runtime, agent.static_prefix(), agent.memory_prefix())
    assert warmup.finished.wait(5)
    assert runtime.warmed == [agent.static_prefix(), agent.memory_prefix()]  # static first: it stays on disk alone too
    assert [m.role for m in agent.memory_prefix()] == ["system", "user"] and "### Memory" not in agent.memory_prefix()[
        0
    ].content
    runtime.enqueue(call("core_memory_append", "save", True, label="human", content="Name: Ada"), say("Hi Ada"))
    warmed = agent.memory_prefix()
    agent.send_user_message("I am Ada")
    assert all(is_prefix(warmed, prompt) for prompt in runtime.prompts)  # the agent's own edit did not rewrite it
    warmup.resume()  # finished already: nothing is warmed twice
    assert len(runtime.warmed) == 2


def test_the_agents_own_edit_appends_to_the_prompt(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(call("core_memory_append", "save", True, label="human", content="Lives in Lisbon"), say("Lisbon!"))
    agent.send_user_message("I live in Lisbon")
    before, after = runtime.prompts
    # The second step's prompt is the first one plus the call, its result and the heartbeat.
    assert is_prefix(before, after)
    assert [m.role for m in after[len(before) :]] == ["assistant", "user", "user"]
    # No memory_update event: the model knows its own edit from its call.
    assert not [m for m in services.memory.recall.all(agent.id) if m.kind == "memory_update"]
    # The memory section still shows the block as rendered; the store has the edit.
    assert "Lives in Lisbon" not in after[1].content
    assert "Lives in Lisbon" in services.memory.core.get(agent.id, "human").value


def test_a_user_edit_arrives_as_a_compact_update_event_before_the_next_message(services, runtime, make_agent):
    agent = make_agent(human="Name: Ada")
    runtime.enqueue(say("Hello"))
    agent.send_user_message("hi")
    services.memory.core.set_value(agent.id, "human", "Name: Ada\nLoves gardening")
    services.memory.core.set_value(agent.id, "persona", "I am Sam.")
    runtime.enqueue(say("Gardening, nice"))
    agent.send_user_message("what do you know?")
    first, second = runtime.prompts
    assert is_prefix(first, second)
    kinds = [m.kind for m in services.memory.recall.all(agent.id)]
    assert kinds[-4:] == ["memory_update", "user_message", "assistant_call", "function_result"]
    update = json.loads(second[-2].content)
    assert update == {
        "type": "memory_update",
        "changes": [{"block": "persona", "now": "I am Sam."}, {"block": "human", "appended": "Loves gardening"}],
    }


def test_documents_added_to_archival_memory_are_reported_once(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(say("Hello"))
    agent.send_user_message("hi")
    services.memory.archival.insert(agent.id, "A passage from a document the user dropped in.")
    runtime.enqueue(say("ok"), say("ok again"))
    agent.send_user_message("I added a document")
    agent.send_user_message("thanks")
    updates = [json.loads(m.content) for m in services.memory.recall.all(agent.id) if m.kind == "memory_update"]
    assert updates == [{"type": "memory_update", "changes": [{"archival_passages": 1}]}]


def test_the_agents_own_archival_insert_is_no_update(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(call("archival_memory_insert", "keep", True, content="The user's cat is Tom."), say("Saved."))
    agent.send_user_message("My cat is Tom")
    runtime.enqueue(say("Hi"))
    agent.send_user_message("hello")
    assert not [m for m in services.memory.recall.all(agent.id) if m.kind == "memory_update"]


def test_the_budget_counts_a_pending_update_before_it_is_saved(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(say("Hello"))
    agent.send_user_message("hi")
    before = agent.budget()
    services.memory.core.set_value(agent.id, "human", "Name: Ada, a long new fact about her garden in Lisbon")
    after = agent.budget()
    assert after.tokens("messages") > before.tokens("messages")
    assert after.tokens("core_memory") == before.tokens("core_memory")
    runtime.enqueue(say("ok"))
    agent.send_user_message("x")
    # What the budget showed is what the next prompt held, before the new user message.
    sent = runtime.prompts[-1]
    assert runtime.count_prompt(sent[:-1]) == after.used


def test_the_memory_section_is_rendered_again_after_many_changes(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(say("Hello"))
    agent.send_user_message("hi")
    for n in range(REFRESH_AFTER):
        services.memory.core.set_value(agent.id, "human", f"fact {n}")
        runtime.enqueue(say("ok"))
        agent.send_user_message(f"turn {n}")
    updates = [m for m in services.memory.recall.all(agent.id) if m.kind == "memory_update"]
    assert len(updates) == REFRESH_AFTER
    services.memory.core.set_value(agent.id, "human", "fact final")
    runtime.enqueue(say("ok"))
    agent.send_user_message("last")
    # Too many changes: the memory section is rendered afresh instead of one more update.
    assert len([m for m in services.memory.recall.all(agent.id) if m.kind == "memory_update"]) == REFRESH_AFTER
    assert "fact final" in runtime.prompts[-1][1].content


def test_a_new_agent_object_renders_the_memory_section_afresh(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(say("Hello"))
    agent.send_user_message("hi")
    services.memory.core.set_value(agent.id, "human", "Name: Ada")
    reopened = make_agent()  # the app restarted or the user switched agents: the cache is cold anyway
    runtime.enqueue(say("Hi Ada"))
    reopened.send_user_message("hello again")
    assert "Name: Ada" in runtime.prompts[-1][1].content
    assert not [m for m in services.memory.recall.all(agent.id) if m.kind == "memory_update"]


def test_events_are_compact(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(call("conversation_search", "look", True, query="x"), say("ok"))
    agent.send_user_message("hi")
    contents = {m.kind: m.content for m in services.memory.recall.all(agent.id)}
    assert contents["heartbeat"] == '{"type": "heartbeat", "reason": "request_heartbeat=true"}'
    assert set(json.loads(contents["function_result"])) == {"status", "message"}
