"""Automatic recall's budget follows what the message needs and the window's room
(memdesk.core.agent.recall.budget): a question gets the section it would get in an 8,192-token
window as far as a smaller window allows, a statement a sixth of it."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from memdesk.core.agent.context import ContextBudget, Section
from memdesk.core.agent.recall.budget import REFERENCE_WINDOW, TELL_SHARE, asks, section_tokens
from memdesk.core.agent.recall.events import EXPIRED
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.scripted import ScriptedRuntime, say


@pytest.mark.parametrize(
    "message",
    [
        "What did Caroline research?",
        "Thanks! Where did we go camping last summer?",
        "Tell me what I said about Lisbon",
        "remind me of my sister's birthday",
        "do you remember the name of my cat",
    ],
)
def test_a_question_with_words_to_search_for_asks(message):
    assert asks(message)


@pytest.mark.parametrize(
    "message",
    [
        "I went camping with the kids last weekend.",
        "How about you?",  # a question, but nothing to search for
        "That's great, I love it! How are you?",
        "Wow, the painting of the lake is beautiful.",
        "",
    ],
)
def test_a_statement_or_an_empty_question_does_not(message):
    assert not asks(message)


def prompt(window: int, fixed: int, messages: int = 300, recall: int = 0, reserve: int = 384) -> ContextBudget:
    """A prompt of ``window`` tokens whose instructions, tools and memory take ``fixed``."""
    used = fixed + messages + recall
    return ContextBudget(
        window,
        reserve,
        (
            Section("system", fixed, ""),
            Section("messages", messages, ""),
            Section("recall", recall, ""),
            Section("free", window - used, ""),
        ),
    )


def test_a_statement_gets_a_sixth_of_the_share():
    assert section_tokens("I went camping.", prompt(8192, 1500), 0.2) == int(8192 * 0.2 * TELL_SHARE)
    assert section_tokens("I went camping.", prompt(4096, 1500), 0.2) == int(4096 * 0.2 * TELL_SHARE)


def test_a_question_gets_its_share_of_a_large_window():
    assert section_tokens("Where did I go camping?", prompt(8192, 1500), 0.2) == int(8192 * 0.2)
    assert section_tokens("Where did I go camping?", prompt(32768, 1500), 0.2) == int(32768 * 0.2)


def test_a_question_in_a_small_window_gets_the_reference_section_when_the_room_allows():
    # 4,096 - 384 reserved - 1,500 fixed: 2,212 tokens of room, of which 0.75 may go to memories
    assert section_tokens("Where did I go camping?", prompt(4096, 1500), 0.2) == int(REFERENCE_WINDOW * 0.2)
    # a larger fixed prompt leaves less room: the section takes its share of what is left
    assert section_tokens("Where did I go camping?", prompt(4096, 2400), 0.2) == int((4096 - 384 - 2400) * 0.75)
    # and never less than the share of the window itself
    assert section_tokens("Where did I go camping?", prompt(2048, 1500), 0.2) == int(2048 * 0.2)


def test_what_the_conversation_and_older_sections_take_is_room_too():
    """The room is the window less the fixed part: messages and older sections can be evicted."""
    crowded = prompt(4096, 1500, messages=1500, recall=600)
    assert section_tokens("Where did I go camping?", crowded, 0.2) == int(REFERENCE_WINDOW * 0.2)


def forget(services, agent, clock, texts):
    ids = []
    for n, text in enumerate(texts):
        ids.append(
            services.memory.recall.add(
                agent.id,
                role="user",
                kind="user_message",
                content=json.dumps({"type": "user_message", "message": text}),
                created_at=clock.now() - timedelta(days=len(texts) - n),
                search_text=text,
            ).id
        )
    services.agents.update(agent.id, context_start_id=ids[-1] + 1, evicted_count=len(ids))


def event_tokens(services, agent, runtime) -> list[int]:
    return [runtime.count_tokens(m.content) for m in services.memory.recall.all(agent.id) if m.kind == "memories"]


def test_in_the_agent_a_question_is_shown_more_memories_than_a_statement(services, make_agent, clock):
    runtime = ScriptedRuntime(context_window=8192)
    agent = make_agent(
        runtime=runtime, settings=Settings(auto_recall_budget=0.2, auto_recall_timeout_ms=60_000)
    )  # not a test of speed
    forget(services, agent, clock, [f"camping trip {n}: we camped by the lake and the kids fished" for n in range(80)])
    runtime.enqueue(say("Nice!"), say("By the lake."))
    agent.send_user_message("We might go camping by the lake again.")
    told = event_tokens(services, agent, runtime)
    agent.send_user_message("Where did we go camping before?")
    asked = event_tokens(services, agent, runtime)[len(told) :]
    assert len(told) == 1 and len(asked) == 1
    assert told[0] <= 8192 * 0.2 * TELL_SHARE < asked[0] <= 8192 * 0.2


def test_a_questions_section_larger_than_one_messages_share_reaches_the_prompt_whole(services, make_agent, clock):
    """Any other message is cut to a fifth of the window; the section was sized by its own budget."""
    runtime = ScriptedRuntime(context_window=4096)
    agent = make_agent(
        runtime=runtime, settings=Settings(auto_recall_budget=0.3, auto_recall_timeout_ms=60_000)
    )  # not a test of speed
    forget(
        services,
        agent,
        clock,
        [f"camping trip {n}: we camped by the lake and the kids fished for trout" for n in range(120)],
    )
    runtime.enqueue(say("By the lake."))
    agent.send_user_message("Where did we go camping before?")
    section = runtime.prompts[0][-1].content
    stored = [m.content for m in services.memory.recall.all(agent.id) if m.kind == "memories"][0]
    assert section == stored and runtime.count_tokens(section) > 0.2 * 4096


def test_in_a_small_window_the_next_questions_section_replaces_the_last_one_without_evicting_the_conversation(
    services, make_agent, clock
):
    """At 4,096 tokens a question's section takes most of the room, so the next one's would not fit
    beside it: the earlier section expires (its stub stays in the queue) and nothing of the
    conversation leaves, so no summary is written."""
    runtime = ScriptedRuntime(context_window=4096)
    agent = make_agent(
        runtime=runtime, settings=Settings(auto_recall_budget=0.2, auto_recall_timeout_ms=60_000)
    )  # not a test of speed
    forget(
        services,
        agent,
        clock,
        [f"camping trip {n}: we camped by the lake and the kids fished for trout" for n in range(60)]
        + [f"garden note {n}: the basil and the tomatoes on the balcony need water" for n in range(60)],
    )
    start = services.agents.get(agent.id)
    runtime.enqueue(say("By the lake."), say("On the balcony."))
    agent.send_user_message("Where did we go camping before?")
    agent.send_user_message("What grows in the garden on the balcony?")
    after = services.agents.get(agent.id)
    assert (after.context_start_id, after.evicted_count, after.summary) == (
        start.context_start_id,
        start.evicted_count,
        start.summary,
    )
    sections = [m for m in services.memory.recall.all(agent.id) if m.kind == "memories"]
    assert len(sections) == 2 and after.recall_expired_before > sections[0].id
    last_prompt = [message.content for message in runtime.prompts[-1]]
    assert EXPIRED in last_prompt and sections[1].content in last_prompt and sections[0].content not in last_prompt
