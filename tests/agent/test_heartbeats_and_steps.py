"""The step loop: which event comes next after each call, failed-call recovery, and the step cap."""

from __future__ import annotations

import json

from memdesk.core.agent.settings import AgentSettings
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.scripted import call, say


def kinds(services, agent):
    return [m.kind for m in services.memory.recall.all(agent.id)]


def test_send_message_without_heartbeat_returns_control_to_the_user(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(say("Hello!", "greet the user"))
    result = agent.send_user_message("hi")
    assert result.replies == ["Hello!"]
    assert len(result.steps) == 1 and not result.capped
    assert kinds(services, agent) == ["user_message", "assistant_call", "function_result"]


def test_request_heartbeat_runs_the_agent_again(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(
        call("conversation_search", "look it up", True, query="hi"),
        say("Found it."),
    )
    result = agent.send_user_message("hi")
    assert [s.function for s in result.steps] == ["conversation_search", "send_message"]
    assert kinds(services, agent)[3] == "heartbeat"
    heartbeat = json.loads(services.memory.recall.all(agent.id)[3].content)
    assert heartbeat["type"] == "heartbeat" and "request_heartbeat=true" in heartbeat["reason"]


def test_a_call_without_heartbeat_yields_in_a_turn_nobody_waits_for(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(call("core_memory_append", "note it", False, label="human", content="Likes tea"))
    result = agent.timed_heartbeat()
    assert len(result.steps) == 1 and result.replies == []
    assert runtime.pending == 0


def test_a_users_turn_never_ends_in_silence(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(
        call("core_memory_append", "note it", False, label="human", content="Likes tea"), say("Tea, noted!")
    )
    result = agent.send_user_message("I like tea")
    assert [s.function for s in result.steps] == ["core_memory_append", "send_message"] and result.replies == [
        "Tea, noted!"
    ]
    heartbeat = json.loads([m for m in services.memory.recall.all(agent.id) if m.kind == "heartbeat"][-1].content)
    assert heartbeat["reason"] == "you have not answered the user: answer now"
    assert runtime.tools_seen[1] == ["send_message"]  # the grammar allowed nothing else


def test_a_search_result_is_always_read(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(call("conversation_search", "look", False, query="tea"), say("You never mentioned tea."))
    result = agent.send_user_message("did I talk about tea?")
    assert [s.function for s in result.steps] == ["conversation_search", "send_message"]
    reasons = [json.loads(m.content)["reason"] for m in services.memory.recall.all(agent.id) if m.kind == "heartbeat"]
    assert reasons == ["read the result"]


def test_a_failed_call_is_returned_to_the_model_with_a_heartbeat(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(
        call("core_memory_replace", "fix", False, label="human", old_content="not there", new_content="x"),
        say("Sorry, let me try again."),
    )
    result = agent.send_user_message("hi")
    assert [s.ok for s in result.steps] == [False, True]
    messages = services.memory.recall.all(agent.id)
    failure = json.loads(messages[2].content)
    assert failure["status"] == "Failed" and "not found" in failure["message"]
    assert "failed" in json.loads(messages[3].content)["reason"]
    # The model saw its own failure before answering again.
    assert any("Failed" in m.content for m in runtime.prompts[1])


def test_malformed_json_unknown_functions_and_bad_arguments_are_recoverable(services, runtime, make_agent):
    agent = make_agent()
    agent.settings = AgentSettings.from_settings(Settings(max_chained_steps=5))
    runtime.enqueue(
        '{"function": "send_message", "params": {"inner_thoughts": "oops", "message": "unterminated',
        call("fly_to_the_moon", "why not", True),
        call("core_memory_append", "wrong", True, label="human"),  # missing content
        call("conversation_search", "wrong type", True, query="x", page="two"),
        say("Back on track."),
    )
    result = agent.send_user_message("hi")
    assert [s.ok for s in result.steps] == [False, False, False, False, True]
    results = [
        json.loads(m.content)["message"] for m in services.memory.recall.all(agent.id) if m.kind == "function_result"
    ]
    assert "not valid JSON" in results[0]
    assert "Unknown function 'fly_to_the_moon'" in results[1] and "send_message" in results[1]
    assert "missing required argument(s): content" in results[2]
    assert "must be of type integer" in results[3]
    assert result.replies == ["Back on track."]


def test_a_tool_that_crashes_becomes_a_failed_call_not_a_crash(services, runtime, make_agent, monkeypatch):
    agent = make_agent()

    def broken(*args, **kwargs):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(agent.memory.recall, "search_text", broken)
    runtime.enqueue(call("conversation_search", "search", True, query="x"), say("ok"))
    result = agent.send_user_message("hi")
    assert not result.steps[0].ok and "ZeroDivisionError: boom" in result.steps[0].result
    assert result.replies == ["ok"]


def test_the_step_cap_stops_a_runaway_chain(services, runtime, make_agent):
    agent = make_agent(settings=None)
    agent.settings = AgentSettings.from_settings(Settings(max_chained_steps=4))
    for n in range(10):
        runtime.enqueue(call("core_memory_append", "again and again", True, label="human", content=f"fact {n}"))
    result = agent.send_user_message("hi")
    assert result.capped and len(result.steps) == 4
    assert runtime.pending == 6
    # The last step allowed was offered send_message only, so a grammar-constrained model must reply.
    assert runtime.tools_seen[:3] == [agent.tools.names()] * 3
    assert runtime.tools_seen[3] == ["send_message"]
    assert "step cap" in result.describe() and "4 steps" in result.describe()


def test_a_chain_that_already_replied_is_not_forced(services, runtime, make_agent):
    agent = make_agent()
    agent.settings = AgentSettings.from_settings(Settings(max_chained_steps=2))
    runtime.enqueue(call("send_message", "hello first", message="Hi!"))
    agent.send_user_message("hi")
    assert runtime.tools_seen[0] == agent.tools.names()


def test_old_recall_function_names_still_work(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(call("recall_memory_search", "old name", True, query="hello"), say("done"))
    result = agent.send_user_message("hello there")
    assert result.steps[0].ok and result.steps[0].function == "conversation_search"


def test_login_event_reports_the_last_login(services, runtime, make_agent, clock):
    agent = make_agent()
    runtime.enqueue(say("Welcome!"))
    agent.login()
    first = json.loads(services.memory.recall.all(agent.id)[0].content)
    assert first == {"type": "login", "last_login": "Never (first login)", "time": "2026-11-30 09:15 UTC"}
    clock.advance(days=1)
    runtime.enqueue(say("Welcome back!"))
    agent.login()
    second = json.loads([m for m in services.memory.recall.all(agent.id) if m.kind == "login"][1].content)
    assert second["last_login"] == "2026-11-30 09:15 UTC"


def test_timed_heartbeats_honour_pause_heartbeats(services, runtime, make_agent, clock):
    agent = make_agent()
    runtime.enqueue(call("pause_heartbeats", "quiet please", minutes=30))
    assert agent.timed_heartbeat() is not None
    clock.advance(minutes=10)
    assert agent.timed_heartbeat() is None  # paused: nothing runs, nothing stored
    clock.advance(minutes=25)
    runtime.enqueue(say("Still here."))
    assert agent.timed_heartbeat().replies == ["Still here."]


def test_pause_heartbeats_is_capped_at_six_hours(services, runtime, make_agent, clock):
    agent = make_agent()
    runtime.enqueue(call("pause_heartbeats", "long nap", minutes=10_000))
    result = agent.timed_heartbeat()
    assert "360 minutes" in result.steps[0].result
    clock.advance(minutes=361)
    runtime.enqueue(say("awake"))
    assert agent.timed_heartbeat() is not None


def test_stream_events_reach_the_observer_in_order(services, runtime, make_agent):
    from memdesk.core.agent.observer import AgentObserver

    class Recorder(AgentObserver):
        def __init__(self):
            self.pieces = []
            self.steps = []

        def on_stream(self, event):
            self.pieces.append(event)

        def on_step(self, step):
            self.steps.append(step.function)

    recorder = Recorder()
    agent = make_agent(observer=recorder)
    runtime.enqueue(say("Hello there, friend!", "be kind"))
    agent.send_user_message("hi")
    thought = "".join(p.text for p in recorder.pieces if p.kind == "thought")
    message = "".join(p.text for p in recorder.pieces if p.kind == "message")
    assert (thought, message) == ("be kind", "Hello there, friend!")
    assert len([p for p in recorder.pieces if p.kind == "message"]) > 1  # incremental, not one blob
    assert recorder.steps == ["send_message"]
