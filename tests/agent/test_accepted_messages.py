"""A user message is saved the moment the user sends it, committed on its own, and the turn that
answers it runs afterwards on that saved row: a crash in between keeps it, and it is never saved
twice (issue 18)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memdesk.core.agent.accept import accept_user_message
from memdesk.core.base.errors import GenerationCancelled
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.runtime.base import CancelToken
from memdesk.core.runtime.scripted import call, say
from memdesk.core.storage import open_database


def committed_kinds(services, agent_id: int) -> list[str]:
    """What another connection sees: only what is committed (what a crash would leave)."""
    other = open_database(services.paths.database)
    try:
        return [row[0] for row in other.query("SELECT kind FROM messages WHERE agent_id = ? ORDER BY id", (agent_id,))]
    finally:
        other.close()


def test_an_accepted_message_is_committed_before_any_turn_runs_and_answered_once(services, runtime, make_agent):
    agent = make_agent()
    message = accept_user_message(agent.memory, agent.id, "My name is Ada")
    assert committed_kinds(services, agent.id) == ["user_message"]
    runtime.enqueue(say("Hi Ada!"))
    result = agent.answer_user_message(message.id)
    assert result.replies == ["Hi Ada!"] and result.kind == "user_message"
    assert committed_kinds(services, agent.id) == ["user_message", "assistant_call", "function_result"]
    prompt = "\n".join(m.content for m in runtime.prompts[0])
    assert prompt.count("My name is Ada") == 1  # the turn did not add it again


def test_a_message_saved_through_another_connection_is_answered_by_the_agent(services, runtime, make_agent):
    """The window saves through its own connection while the worker's agent is busy elsewhere."""
    agent = make_agent()
    window_db = open_database(services.paths.database)
    try:
        window_memory = replace(services.memory, db=window_db, recall=RecallMemory(window_db, clock=services.clock))
        message = accept_user_message(window_memory, agent.id, "Do you remember me?")
    finally:
        window_db.close()
    runtime.enqueue(say("Of course."))
    assert agent.answer_user_message(message.id).replies == ["Of course."]
    assert [m.kind for m in services.memory.recall.all(agent.id)] == [
        "user_message",
        "assistant_call",
        "function_result",
    ]


def test_answering_rejects_a_message_that_is_not_this_agents_user_message(services, runtime, make_agent):
    sam, ana = make_agent("sam"), make_agent("ana")
    message = accept_user_message(ana.memory, ana.id, "hello")
    with pytest.raises(ValueError):
        sam.answer_user_message(message.id)


class AcceptsWhileAsked:
    """Consent whose dialog is open when the user sends a message: the front end saves it and
    cancels the background turn, whose call then finishes (the user allowed it)."""

    def __init__(self, agent, token: CancelToken) -> None:
        self.agent, self.token = agent, token

    def allow(self, agent_id: int, tool: str, summary: str) -> bool:
        accept_user_message(self.agent.memory, self.agent.id, "stop, I am back")
        self.token.cancel()
        return True


def test_a_background_step_that_ends_after_the_users_message_queues_no_event_behind_it(services, runtime, make_agent):
    agent = make_agent()
    token = CancelToken()
    agent.consent = AcceptsWhileAsked(agent, token)
    runtime.enqueue(call("append_to_text_file", "tidy up", True, filename="notes.txt", content="hello"))
    with pytest.raises(GenerationCancelled):
        agent.timed_heartbeat(token)
    # The call ran and is recorded; no heartbeat follows the user's message: it is next to answer.
    assert committed_kinds(services, agent.id) == ["heartbeat", "user_message", "assistant_call", "function_result"]
    runtime.enqueue(say("Welcome back."))
    last = services.memory.recall.all(agent.id)[1]
    assert agent.answer_user_message(last.id).replies == ["Welcome back."]
