"""Replies that copy the user's message or a recent reply (issue 35, found as a new user: the
bundled model answered "What does my sister do?" with the user's first message word for word).
A copy is told from a reply that quotes a few words; it is generated once more with the copied
run to be avoided (the runtime penalises it); the step costs both generations. The real model's
side: tests/runtime/test_copied_replies_real_model.py and `python -m bench.latency`."""

from __future__ import annotations

import dataclasses

from memdesk.core.agent.repetition import copied
from memdesk.core.runtime.scripted import say

FIRST = "Hi, I am Ada. I live in Lisbon and I love gardening. My sister Ines is a doctor in Porto."


def test_a_reply_that_is_most_of_a_recent_message_is_a_copy_and_a_quote_is_not():
    recent = ["What does my sister do?", FIRST]
    copy = copied("Hi, I am Ada. I live in Lisbon and I love gardening.", recent)
    assert copy is not None and copy.source == FIRST
    assert copy.span == "Hi, I am Ada. I live in Lisbon and I love gardening"
    assert copied("Your sister Ines is a doctor in Porto, you told me.", recent) is not None  # most of the reply
    assert copied("She is a doctor. You said you love gardening, right?", recent) is None  # a few words back
    assert copied("Hi, Ada!", ["Hi, Ada!"]) is None  # too short to tell an echo from a greeting
    assert copied("SAME WORDS in another case, here", ["same words, in another case here"]) is not None


def test_a_copied_reply_is_generated_once_more_with_the_copy_avoided(make_agent, runtime):
    agent = make_agent("sam")
    runtime.enqueue(say("Nice to meet you, Ada."))
    agent.send_user_message(FIRST)
    runtime.enqueue(say("Hi, I am Ada. I live in Lisbon and I love gardening."), say("She is a doctor in Porto."))
    result = agent.send_user_message("What does my sister do?")
    assert result.replies == ["She is a doctor in Porto."]
    assert len(result.steps) == 1  # one step, two generations
    first, again = runtime.avoided[-2:]
    assert first == () and again[0] == "Hi, I am Ada. I live in Lisbon and I love gardening"
    assert set(again[1:]) == {"What does my sister do?", "Nice to meet you, Ada."}  # no other copy either
    replies = [m.search_text for m in agent.memory.recall.all(agent.id) if m.function_name == "send_message"]
    assert "Hi, I am Ada. I live in Lisbon and I love gardening." not in replies


def test_saying_the_previous_reply_again_is_a_copy_too(make_agent, runtime):
    agent = make_agent("sam")
    runtime.enqueue(say("Tomatoes like a sunny spot and water every morning."))
    agent.send_user_message("How do I grow tomatoes?")
    runtime.enqueue(say("Tomatoes like a sunny spot and water every morning."), say("Basil likes some shade."))
    assert agent.send_user_message("And basil?").replies == ["Basil likes some shade."]


def test_an_answer_of_its_own_is_not_generated_again(make_agent, runtime):
    agent = make_agent("sam")
    runtime.enqueue(say("Nice to meet you, Ada. Lisbon is lovely in spring."))
    agent.send_user_message(FIRST)
    assert runtime.avoided == [()]


def test_the_check_can_be_turned_off(services, make_agent, runtime):
    settings = dataclasses.replace(services.settings, repeat_check_messages=0, auto_recall_timeout_ms=600_000)
    agent = make_agent("sam", settings=settings)
    runtime.enqueue(say(FIRST))
    assert agent.send_user_message(FIRST).replies == [FIRST]
