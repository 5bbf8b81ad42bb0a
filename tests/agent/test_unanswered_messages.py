"""A user message is owed a reply until the agent sends one after it; whatever ended the turn
early, the store alone says which messages wait, and answering them twice is impossible (issue 22)."""

from __future__ import annotations

import pytest

from memdesk.core.agent import unanswered
from memdesk.core.agent.accept import accept_user_message
from memdesk.core.base.errors import GenerationCancelled
from memdesk.core.runtime.base import CancelToken
from memdesk.core.runtime.scripted import call, say


def owed(services, agent_id: int) -> list[str]:
    return [m.search_text for m in unanswered.unanswered(services.db, services.memory.recall, agent_id)]


def test_a_message_is_unanswered_until_the_agent_sends_a_reply_after_it(services, runtime, make_agent):
    agent = make_agent()
    assert agent.unanswered() is None  # a new agent owes nothing
    message = accept_user_message(agent.memory, agent.id, "Hi, I am Ada")
    assert agent.unanswered().id == message.id
    runtime.enqueue(call("conversation_search", "look", query="Ada"), say("Hello Ada"))
    agent.answer_user_message(message.id)
    assert agent.unanswered() is None and owed(services, agent.id) == []


def test_background_events_and_other_calls_are_not_a_reply(services, runtime, make_agent):
    agent = make_agent()
    message = accept_user_message(agent.memory, agent.id, "Where do I live?")
    # A login turn that only edits memory and is cancelled before it says anything.
    token = CancelToken()

    def cut_short(_messages):  # the window closed while the login turn was about to answer
        token.cancel()
        return say("Welcome back")

    runtime.enqueue(call("core_memory_append", "note", True, label="human", content="Ada"), cut_short)
    with pytest.raises(GenerationCancelled):
        agent.login(token)
    kinds = [m.kind for m in services.memory.recall.all(agent.id)]
    assert kinds[0] == "user_message" and "login" in kinds and "assistant_call" in kinds
    assert agent.unanswered().id == message.id


def test_a_reply_before_the_message_does_not_answer_it(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(say("Hello"))
    agent.send_user_message("first")
    later = accept_user_message(agent.memory, agent.id, "second")
    assert owed(services, agent.id) == ["second"] and agent.unanswered().id == later.id


def test_a_turn_cut_short_leaves_its_message_owed(services, runtime, make_agent):
    agent = make_agent()
    message = accept_user_message(agent.memory, agent.id, "Tell me a story")
    token = CancelToken()
    token.cancel()  # the user pressed Stop (or the window closed) before the first step
    with pytest.raises(GenerationCancelled):
        agent.answer_user_message(message.id, token)
    assert agent.unanswered().id == message.id


def test_several_owed_messages_are_answered_by_one_turn_on_the_newest(services, runtime, make_agent):
    agent = make_agent()
    accept_user_message(agent.memory, agent.id, "I live in Lisbon")
    newest = accept_user_message(agent.memory, agent.id, "and I love gardening")
    assert owed(services, agent.id) == ["I live in Lisbon", "and I love gardening"]
    assert agent.unanswered().id == newest.id
    runtime.enqueue(say("Lisbon gardens are lovely"))
    assert agent.answer_if_unanswered(newest.id).replies == ["Lisbon gardens are lovely"]
    prompt = "\n".join(m.content for m in runtime.prompts[0])
    assert "I live in Lisbon" in prompt and "and I love gardening" in prompt
    assert owed(services, agent.id) == []


def test_a_message_is_never_answered_twice(services, runtime, make_agent):
    agent = make_agent()
    message = accept_user_message(agent.memory, agent.id, "Hi")
    runtime.enqueue(say("Hello!"))
    assert agent.answer_if_unanswered(message.id).replies == ["Hello!"]
    prompts = len(runtime.prompts)
    assert agent.answer_if_unanswered(message.id) is None  # queued again (sent while loading, found on open)
    assert len(runtime.prompts) == prompts  # the model was not asked
    replies = [
        m
        for m in services.memory.recall.all(agent.id)
        if m.kind == "assistant_call" and m.function_name == "send_message"
    ]
    assert len(replies) == 1


def test_a_stopped_reply_is_owed_but_not_answered_on_open_until_a_turn_answers_it_again(services, runtime, make_agent):
    agent = make_agent()
    message = accept_user_message(agent.memory, agent.id, "Tell me a story")
    assert (
        unanswered.owed_on_open(services.db, services.memory.recall, agent.id).id == message.id
    )  # a close: answered on open
    unanswered.mark_stopped(services.db, message.id, services.clock.now())
    assert unanswered.was_stopped(services.db, message.id)
    assert agent.unanswered().id == message.id  # still owed: Retry or the next message answers it
    assert unanswered.owed_on_open(services.db, services.memory.recall, agent.id) is None
    unanswered.clear_stopped(services.db, message.id)  # a Retry's turn began
    assert unanswered.owed_on_open(services.db, services.memory.recall, agent.id).id == message.id


def test_a_newer_message_after_a_stopped_one_is_answered_on_open(services, runtime, make_agent):
    agent = make_agent()
    stopped = accept_user_message(agent.memory, agent.id, "Tell me a story")
    unanswered.mark_stopped(services.db, stopped.id, services.clock.now())
    newer = accept_user_message(agent.memory, agent.id, "Actually, a short one")  # then the window closed mid-reply
    assert unanswered.owed_on_open(services.db, services.memory.recall, agent.id).id == newer.id


def test_a_stop_mark_goes_with_its_message(services, runtime, make_agent):
    agent = make_agent()
    message = accept_user_message(agent.memory, agent.id, "Tell me a story")
    unanswered.mark_stopped(services.db, message.id, services.clock.now())
    services.db.execute("DELETE FROM messages WHERE id = ?", (message.id,))  # retention, an agent deleted
    assert services.db.scalar("SELECT COUNT(*) FROM stopped_replies") == 0
