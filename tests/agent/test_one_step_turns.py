"""An ordinary turn takes one step (issue 24): the reply may carry a fact for the human block, so a
memory edit costs no step before the reply; a search or message_chatgpt is not offered when
automatic recall has just placed memories for the message; inner_thoughts has a bound the grammar
keeps, stated in the instructions and chosen per model. On the scripted runtime, which records
what each step offered."""

from __future__ import annotations

import json

from memdesk.core.agent.settings import AgentSettings
from memdesk.core.base.settings_table import Settings
from memdesk.core.memory.history import AGENT, BLOCK
from memdesk.core.models.catalog import load_catalog
from memdesk.core.runtime.scripted import call, say
from tests.agent.test_auto_recall import forget


def results(services, agent) -> list[dict]:
    return [json.loads(m.content) for m in services.memory.recall.all(agent.id) if m.kind == "function_result"]


def remembering(message: str, note: str, thoughts: str = "greet, save") -> str:
    return call("send_message", thoughts, message=message, remember=note)


# --- a reply that remembers ------------------------------------------------------------------
def test_a_reply_can_save_a_fact_about_the_user_in_the_same_step(services, runtime, make_agent):
    agent = make_agent(human="Name: unknown")
    runtime.enqueue(remembering("Nice to meet you, Ada!", "Name: Ada. Lives in Lisbon."))
    result = agent.send_user_message("Hi, I am Ada and I live in Lisbon.")
    assert len(result.steps) == 1 and result.replies == ["Nice to meet you, Ada!"]
    assert services.memory.core.get(agent.id, "human").value == "Name: unknown\nName: Ada. Lives in Lisbon."
    assert results(services, agent)[-1]["message"].startswith(
        "Sent message successfully. Remembered in the human block"
    )
    # The history says the agent wrote it, caused by the user's message and that very call.
    change = services.memory.core.history.for_agent(agent.id, kind=BLOCK)[0]
    call_id = [m.id for m in services.memory.recall.all(agent.id) if m.kind == "assistant_call"][-1]
    assert change.source == AGENT and change.step_id == call_id and change.after.endswith("Lives in Lisbon.")
    # The agent knows its own edit from its call: the next turn brings no memory_update event.
    runtime.enqueue(say("Lisbon is lovely."))
    agent.send_user_message("Do you like it?")
    assert not [m for m in services.memory.recall.all(agent.id) if m.kind == "memory_update"]


def test_a_fact_the_block_holds_already_is_not_written_twice(services, runtime, make_agent):
    agent = make_agent(human="Name: Ada. Lives in Lisbon.")
    runtime.enqueue(remembering("Hello again!", "lives in lisbon"))
    agent.send_user_message("Hi, it's Ada from Lisbon.")
    assert services.memory.core.get(agent.id, "human").value == "Name: Ada. Lives in Lisbon."
    assert "holds that already" in results(services, agent)[-1]["message"]


def test_a_fact_that_does_not_fit_is_reported_and_the_reply_still_counts_as_sent(services, runtime, make_agent):
    agent = make_agent(human="Name: Ada")
    services.memory.core.configure(agent.id, "human", limit=20)
    runtime.enqueue(remembering("Noted!", "Grows tomatoes and basil on her balcony."))
    result = agent.send_user_message("I grow tomatoes and basil on my balcony.")
    # One step: the message reached the user, so nothing is sent again; the model reads why.
    assert len(result.steps) == 1 and result.steps[0].ok and result.replies == ["Noted!"]
    assert services.memory.core.get(agent.id, "human").value == "Name: Ada"
    assert (
        "Not remembered" in results(services, agent)[-1]["message"]
        and "limit of 20" in results(services, agent)[-1]["message"]
    )
    assert agent.unanswered() is None


def test_an_empty_reply_saves_nothing(services, runtime, make_agent):
    agent = make_agent(human="Name: Ada")
    runtime.enqueue(remembering("  ", "Likes tea."), say("Sorry, hello!"))
    result = agent.send_user_message("Hi")
    assert [s.ok for s in result.steps] == [False, True]
    assert services.memory.core.get(agent.id, "human").value == "Name: Ada"


def test_the_note_is_offered_bounded_and_only_where_a_writable_human_block_exists(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(say("Hi"))
    agent.send_user_message("Hi")
    reply = next(s for s in runtime.specs_seen[0] if s.name == "send_message")
    assert reply.parameters["properties"]["remember"]["maxLength"] == 200 and reply.parameters["required"] == [
        "message"
    ]
    services.memory.core.configure(agent.id, "human", read_only=True)
    runtime.enqueue(say("Hi again"))
    agent.send_user_message("Hi again")
    reply = next(s for s in runtime.specs_seen[1] if s.name == "send_message")
    assert "remember" not in reply.parameters["properties"]


def test_the_instructions_show_a_one_step_reply_that_remembers(services, runtime, make_agent):
    instructions = make_agent().record.system_prompt
    example = instructions[instructions.index("Example") :]
    assert '"function": "send_message"' in example and '"remember": ' in example and "core_memory_append" not in example


# --- automatic recall's memories make a search idle ------------------------------------------
SEARCHES = {"conversation_search", "conversation_search_date", "archival_memory_search", "knowledge_graph_search"}
#: Recall that never times out here: what is under test is what its result allows, not its speed.
PATIENT = Settings(auto_recall_timeout_ms=600_000)


def test_no_search_nor_message_chatgpt_is_offered_once_automatic_recall_placed_memories(
    services, runtime, make_agent, clock
):
    agent = make_agent(settings=PATIENT)
    forget(services, agent, clock, ["My cat is called Tom", "Tom sleeps on the basil pots"])
    runtime.enqueue(say("Your cat is Tom."))
    result = agent.send_user_message("What is my cat called?")
    assert agent.last_recall.status == "placed" and len(result.steps) == 1
    offered = set(runtime.tools_seen[0])
    assert not offered & (SEARCHES | {"message_chatgpt"})
    assert {"send_message", "core_memory_append", "core_memory_replace", "archival_memory_insert"} <= offered


def test_a_model_that_searches_anyway_is_told_why_and_answers(services, runtime, make_agent, clock, monkeypatch):
    agent = make_agent(settings=PATIENT)
    forget(services, agent, clock, ["My cat is called Tom"])
    ran = []
    monkeypatch.setattr(services.memory.recall, "search_text", lambda *a, **k: ran.append(a))
    runtime.enqueue(call("conversation_search", "look", True, query="cat"), say("Your cat is Tom."))
    result = agent.send_user_message("What is my cat called?")
    assert [s.function for s in result.steps] == ["conversation_search", "send_message"] and not ran
    refused = result.steps[0]
    assert refused.refused and "automatic recall found for this message are in view" in refused.result


def test_searches_stay_offered_when_automatic_recall_found_nothing(services, runtime, make_agent):
    agent = make_agent(settings=PATIENT)
    agent.settings = AgentSettings.from_settings(Settings())  # a model that is offered message_chatgpt
    runtime.enqueue(say("Hello!"))
    agent.send_user_message("Hello")
    assert agent.last_recall.status == "nothing"
    assert SEARCHES <= set(runtime.tools_seen[0]) and "message_chatgpt" in runtime.tools_seen[0]


def test_a_background_turn_after_a_recalled_message_may_search(services, runtime, make_agent, clock):
    agent = make_agent(settings=PATIENT)
    forget(services, agent, clock, ["My cat is called Tom"])
    runtime.enqueue(say("Your cat is Tom."))
    agent.send_user_message("What is my cat called?")
    runtime.enqueue(call("pause_heartbeats", "quiet", False, minutes=30))
    agent.timed_heartbeat()
    assert SEARCHES <= set(runtime.tools_seen[-1])


# --- the thoughts' bound ---------------------------------------------------------------------
def requests(runtime) -> list:
    """Every CallRequest the scripted runtime receives from now on."""
    seen = []
    original = runtime.generate_call

    def recording(request, **kwargs):
        seen.append(request)
        return original(request, **kwargs)

    runtime.generate_call = recording
    return seen


def test_the_thoughts_bound_is_the_active_models_and_stated_in_the_instructions(services, runtime, make_agent):
    bundled = load_catalog().bundled.profile.thoughts_chars
    assert bundled is not None and bundled < Settings().max_thought_chars  # tuned for the tiny model
    agent = make_agent()  # the default settings: the bundled model is active
    seen = requests(runtime)
    runtime.enqueue(say("Hi"))
    agent.send_user_message("Hi")
    assert seen[0].thoughts_chars == bundled
    assert f"inner_thoughts holds at most {bundled} characters" in agent.static_prefix()[0].content


def test_a_thoughts_bound_the_user_set_beats_the_catalogs(services, runtime, make_agent):
    services.settings_store.set("max_thought_chars", 300)
    agent = make_agent(settings=services.settings_store.load())
    seen = requests(runtime)
    runtime.enqueue(say("Hi"))
    agent.send_user_message("Hi")
    assert seen[0].thoughts_chars == 300 and "at most 300 characters" in agent.static_prefix()[0].content


# --- functions a model is not offered --------------------------------------------------------
def test_the_bundled_model_is_not_offered_message_chatgpt(services, runtime, make_agent):
    """Its more basic AI would be itself without memory: one more generation before the reply."""
    assert "message_chatgpt" in load_catalog().bundled.profile.hidden_functions
    agent = make_agent()  # the default settings: the bundled model is active
    runtime.enqueue(say("Hi"))
    agent.send_user_message("Hi")
    assert "message_chatgpt" not in runtime.tools_seen[0] and "send_message" in runtime.tools_seen[0]
    tools_section = agent.static_prefix()[0].content.split("### Functions", 1)[1]
    assert "message_chatgpt" not in tools_section and "- send_message(" in tools_section
    agent.settings = AgentSettings.from_settings(Settings())  # a model without that entry
    runtime.enqueue(say("Hi again"))
    agent.send_user_message("Hi again")
    assert "message_chatgpt" in runtime.tools_seen[1] and "message_chatgpt" in agent.static_prefix()[0].content


def test_a_search_is_offered_again_once_the_turn_changed_memory(services, runtime, make_agent, clock):
    """What recall placed was found before the edit: a search may now find what it could not."""
    agent = make_agent(settings=PATIENT)
    forget(services, agent, clock, ["My cat is called Tom"])
    runtime.enqueue(call("archival_memory_insert", "note it", True, content="Tom is a grey cat"), say("Noted."))
    agent.send_user_message("What is my cat called? He is grey.")
    assert agent.last_recall.status == "placed"
    assert "archival_memory_search" not in runtime.tools_seen[0] and "archival_memory_search" in runtime.tools_seen[1]
