"""The conversation's rules, each written once and run against the Session and against each front
end's adapter over it (the window, the terminal): the same behaviour everywhere."""

from __future__ import annotations

import threading

import pytest

from memdesk.core.agent import unanswered
from memdesk.core.agent.accept import accept_user_message
from memdesk.core.runtime.scripted import ScriptedRuntime, say
from tests.session.drivers import wait_until
from tests.ui.test_chat import SlowRuntime


def kinds(services, agent_id: int) -> list[str]:
    return [m.kind for m in services.memory.recall.all(agent_id)]


def replies(services, agent_id: int) -> list[str]:
    return [
        m.search_text
        for m in services.memory.recall.all(agent_id)
        if m.kind == "assistant_call" and m.function_name == "send_message" and m.search_text
    ]


def test_a_timed_heartbeat_runs_after_the_idle_time_and_a_message_preempts_it(drive, services, agent_id, idle_after):
    idle_after(heartbeat=0.3)
    runtime = SlowRuntime([say("thinking aloud " * 300), say("Hi Ada!")], context_window=32768)
    conversation = drive(lambda _settings: runtime)
    conversation.wait_open()
    assert runtime.streaming.wait(30)  # the heartbeat, on its own after the idle time
    conversation.send("I am Ada")
    assert wait_until(lambda: replies(services, agent_id) == ["Hi Ada!"])
    # The heartbeat's long answer never finished: it left no call, so the reply did not wait for it.
    assert kinds(services, agent_id)[:4] == ["heartbeat", "user_message", "assistant_call", "function_result"]


def test_a_message_left_without_a_reply_is_answered_as_the_agent_opens_before_any_login(drive, services, agent_id):
    services.settings_store.set("login_after_minutes", 60)
    owed = accept_user_message(services.memory, agent_id, "Hi, I am Ada. I live in Lisbon.")
    runtime = ScriptedRuntime([say("Welcome, Ada!")], context_window=32768)
    conversation = drive(lambda _settings: runtime)
    conversation.wait_open()
    assert wait_until(lambda: replies(services, agent_id) == ["Welcome, Ada!"])
    conversation.wait_idle()
    assert "Hi, I am Ada" in "\n".join(m.content for m in runtime.prompts[0])
    assert "login" not in kinds(services, agent_id) and len(runtime.prompts) == 1
    assert not unanswered.is_unanswered(services.db, agent_id, owed.id)


def test_a_stopped_reply_waits_for_retry_even_after_a_restart_and_retry_answers_it(drive, services, agent_id):
    runtime = SlowRuntime([say("word " * 400)], context_window=32768)
    conversation = drive(lambda _settings: runtime)
    conversation.wait_open()
    conversation.send("Tell me a long story")
    assert runtime.streaming.wait(30)
    conversation.stop()
    conversation.wait_idle()
    message = unanswered.newest(services.db, services.memory.recall, agent_id)
    assert message is not None and unanswered.was_stopped(services.db, message.id)
    conversation.close()

    again = ScriptedRuntime([say("Once upon a time.")], context_window=32768)
    conversation = drive(lambda _settings: again)
    conversation.wait_open()
    conversation.wait_idle()
    assert again.prompts == []  # the user's Stop is not undone on its own
    conversation.retry()
    assert wait_until(lambda: replies(services, agent_id) == ["Once upon a time."])


# Not the terminal: its prompt shows only once the model has loaded, so nothing can be typed before.
@pytest.mark.parametrize("drive", ["session", "window"], indirect=True)
def test_a_message_sent_while_the_model_loads_is_answered_once_it_has(drive, services, agent_id):
    gate = threading.Event()
    runtime = ScriptedRuntime([say("Hello Ada, I was still waking up.")], context_window=32768)

    def slow_factory(_settings):
        gate.wait(30)
        return runtime

    conversation = drive(slow_factory)
    conversation.send("Hi, I am Ada")  # the model is still loading
    assert kinds(services, agent_id) == ["user_message"]  # saved at once
    gate.set()
    assert wait_until(lambda: replies(services, agent_id) == ["Hello Ada, I was still waking up."])
    conversation.wait_idle()
    assert runtime.pending == 0 and len(runtime.prompts) == 1  # answered once
