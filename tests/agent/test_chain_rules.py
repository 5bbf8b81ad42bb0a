"""Chain control (Letta's tool rules): identical calls, search caps, what may follow a search, and
the step cap, on the scripted runtime. The scripted runtime ignores the grammar, so the tests see
both what a step offered (``tools_seen``) and what the agent does when a model ignores it."""

from __future__ import annotations

import json

import pytest

from memdesk.core.agent.settings import AgentSettings
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.scripted import call, say


def results(services, agent) -> list[dict]:
    return [json.loads(m.content) for m in services.memory.recall.all(agent.id) if m.kind == "function_result"]


@pytest.fixture
def searches(monkeypatch, services):
    """Counts the recall searches that really ran."""
    ran: list[str] = []
    original = services.memory.recall.search_text

    def counting(agent_id, query, **kwargs):
        ran.append(query)
        return original(agent_id, query, **kwargs)

    monkeypatch.setattr(services.memory.recall, "search_text", counting)
    return ran


def test_an_identical_call_is_refused_before_it_runs_and_the_model_is_told_to_answer(
    services, runtime, make_agent, searches
):
    agent = make_agent()
    agent.settings = AgentSettings.from_settings(Settings(max_chained_steps=6))
    runtime.enqueue(
        call("conversation_search", "look", True, query="garden"),
        call("conversation_search", "look again", True, query="garden"),
        say("I found nothing about gardens."),
    )
    result = agent.send_user_message("what did I say about my garden?")
    assert [s.function for s in result.steps] == ["conversation_search", "conversation_search", "send_message"]
    assert searches == ["garden"]  # the repeat never ran
    refused = result.steps[1]
    assert refused.refused and not refused.ok
    assert (
        "already called conversation_search with these arguments" in refused.result and "send_message" in refused.result
    )
    heartbeat = json.loads([m for m in services.memory.recall.all(agent.id) if m.kind == "heartbeat"][-1].content)
    assert heartbeat == {"type": "heartbeat", "reason": "the call was refused: answer the user now"}
    # After the refusal, the grammar offered the answer only.
    assert runtime.tools_seen[2] == ["send_message"]
    assert len(result.steps) == 3 and result.replies


def test_identical_means_same_function_and_arguments(services, runtime, make_agent, searches):
    agent = make_agent()
    agent.settings = AgentSettings.from_settings(Settings(max_chained_steps=6))
    runtime.enqueue(
        call("core_memory_append", "save", True, label="human", content="Likes tea"),
        call("core_memory_append", "save more", True, label="human", content="Likes cake"),
        call("core_memory_append", "save again", True, label="human", content="Likes tea"),
        say("Noted."),
    )
    result = agent.send_user_message("I like tea and cake")
    assert [s.ok for s in result.steps] == [True, True, False, True]
    assert services.memory.core.get(agent.id, "human").value.count("Likes tea") == 1


def test_a_new_turn_may_repeat_a_call_of_the_previous_turn(services, runtime, make_agent, searches):
    agent = make_agent()
    runtime.enqueue(call("conversation_search", "look", True, query="tea"), say("Nothing yet."))
    agent.send_user_message("tea?")
    runtime.enqueue(call("conversation_search", "look", True, query="tea"), say("Now I see it."))
    result = agent.send_user_message("tea again?")
    assert all(step.ok for step in result.steps) and searches == ["tea", "tea"]


def test_after_a_search_the_next_step_may_only_answer_read_edit_or_page(services, runtime, make_agent, clock):
    agent = make_agent()
    for n in range(12):  # enough messages for three pages of results
        services.memory.recall.add(
            agent.id,
            role="user",
            kind="user_message",
            content=f"tulip note {n}",
            created_at=clock.now(),
            search_text=f"tulip note {n}",
        )
    runtime.enqueue(call("conversation_search", "look", True, query="tulip"), say("Tulips, many times."))
    agent.send_user_message("tulips?")
    first, after = runtime.specs_seen[0], runtime.specs_seen[1]
    assert "conversation_search" in [s.name for s in first]
    kinds = {agent.tools.resolve(s.name).kind for s in after}
    assert kinds <= {"answer", "read", "edit", "search"}
    assert {s.name for s in after} >= {
        "send_message",
        "core_memory_append",
        "archival_memory_insert",
        "read_from_text_file",
    }
    assert not {"archival_memory_search", "conversation_search_date", "message_chatgpt", "http_request"} & {
        s.name for s in after
    }
    # The search itself is offered only as its next page, its arguments fixed by the grammar.
    paging = next(s for s in after if s.name == "conversation_search")
    assert paging.parameters["properties"]["query"]["enum"] == ["tulip"]
    assert paging.parameters["properties"]["page"]["enum"] == [1]
    assert "page" in paging.parameters["required"]


def test_paging_through_a_search_is_reading_and_a_different_search_right_after_is_refused(
    services, runtime, make_agent, clock, searches
):
    agent = make_agent()
    agent.settings = AgentSettings.from_settings(Settings(max_chained_steps=6))
    for n in range(7):  # two pages of five
        services.memory.recall.add(
            agent.id,
            role="user",
            kind="user_message",
            content=f"tulip note {n}",
            created_at=clock.now(),
            search_text=f"tulip note {n}",
        )
    runtime.enqueue(
        call("conversation_search", "look", True, query="tulip"),
        call("conversation_search", "next page", True, query="tulip", page=1),
        call("conversation_search", "something else", True, query="roses"),  # a grammar would not allow it
        say("Tulips, many times."),
    )
    result = agent.send_user_message("tulips?")
    assert [s.ok for s in result.steps] == [True, True, False, True]
    assert "Right after a search" in result.steps[2].result
    assert searches == ["tulip", "tulip"]
    assert "conversation_search" in runtime.tools_seen[1]
    # No page after the last one: the search is not offered at all then.
    assert "conversation_search" not in runtime.tools_seen[2]


def test_each_search_function_is_capped_per_turn(services, runtime, make_agent, searches):
    agent = make_agent()
    agent.settings = AgentSettings.from_settings(Settings(max_chained_steps=8, max_searches_per_turn=2))
    runtime.enqueue(
        call("conversation_search", "one", True, query="a"),
        call("core_memory_append", "note", True, label="human", content="x1"),
        call("conversation_search", "two", True, query="b"),
        call("core_memory_append", "note", True, label="human", content="x2"),
        call("conversation_search", "three", True, query="c"),  # over the cap
        say("done"),
    )
    result = agent.send_user_message("search a lot")
    assert searches == ["a", "b"]
    assert not result.steps[4].ok and "2 times in this turn" in result.steps[4].result
    # Once the cap was reached the grammar no longer offered that search; other searches stay.
    assert "conversation_search" not in runtime.tools_seen[4]
    assert "archival_memory_search" in runtime.tools_seen[4]


def test_a_function_with_a_generation_of_its_own_runs_once_per_turn(services, runtime, make_agent):
    agent = make_agent()
    agent.settings = AgentSettings.from_settings(Settings(max_chained_steps=6))
    runtime.enqueue(
        call("message_chatgpt", "ask", True, message="What grows well on a balcony?"),
        call("message_chatgpt", "ask more", True, message="And in the shade?"),  # a different question: still refused
        say("Basil and mint grow well on a balcony."),
        call("message_chatgpt", "next turn", True, message="What about herbs?"),
        say("Herbs too."),
    )
    first = agent.send_user_message("What should I plant?")
    assert [s.function for s in first.steps] == ["message_chatgpt", "message_chatgpt", "send_message"]
    assert first.steps[0].ok and not first.steps[1].ok and "once per turn" in first.steps[1].result
    assert len(runtime.text_prompts) == 1  # the second generation never ran
    assert "message_chatgpt" in runtime.tools_seen[0] and "message_chatgpt" not in runtime.tools_seen[1]
    second = agent.send_user_message("And herbs?")  # a new turn may ask again
    assert second.steps[0].function == "message_chatgpt" and second.steps[0].ok


def test_the_default_step_cap_is_low_and_a_setting(services, runtime, make_agent):
    from memdesk.core.base.settings_table import Settings

    assert Settings().max_chained_steps <= 4
    agent = make_agent(settings=Settings(max_chained_steps=7, max_searches_per_turn=3))
    assert agent.settings.max_steps == 7 and agent.settings.searches_per_turn == 3


def test_steps_per_turn_are_reported(services, runtime, make_agent):
    from memdesk.core.agent.observer import AgentObserver

    class Turns(AgentObserver):
        def __init__(self):
            self.turns = []

        def on_turn_end(self, result):
            self.turns.append(result)

    observer = Turns()
    agent = make_agent(observer=observer)
    runtime.enqueue(call("core_memory_append", "save", True, label="human", content="Ada"), say("Hi Ada"))
    result = agent.send_user_message("I am Ada")
    assert observer.turns == [result] and len(result.steps) == 2 and result.kind == "user_message"
    assert result.describe().startswith("2 steps in ")


def test_a_new_search_is_offered_without_a_page(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(say("hi"))
    agent.send_user_message("hi")
    offered = {s.name: s for s in runtime.specs_seen[0]}
    for name in ("conversation_search", "conversation_search_date", "archival_memory_search"):
        assert "page" not in offered[name].parameters["properties"]
    # The prompt's tools section still documents paging.
    assert "page (integer, optional)" in agent.static_prefix()[0].content
