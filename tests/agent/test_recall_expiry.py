"""Old automatic-recall sections expire when a new one needs room, or at an eviction (scripted
runtime).

Until then the prompt only grows (the KV cache of the conversation stays valid). When a new
section would not fit, the earlier ones are shown as a one-line stub (their memories may be shown
again); only when that is not enough is the conversation evicted, which evaluates everything
below the memory section again anyway, and then every memories event but the newest is a stub too.
The summarizer is not asked to summarize memories events as conversation.
"""

from __future__ import annotations

import json

import pytest

from memdesk.core.agent.observer import AgentObserver
from memdesk.core.agent.recall.events import EXPIRED
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.scripted import ScriptedRuntime, say


@pytest.fixture(autouse=True)
def judged_by_support(monkeypatch):
    """Sections judged by support.py alone, not the shipped "nothing on that" judge: the judge
    (trained on real conversations and the real embedder) decides the section's note, whose length
    moves where the eviction falls in these token-counted scenarios; expiry is what they test."""
    monkeypatch.setattr("memdesk.app.services.learned.shipped", lambda: None)


TOPICS = [
    "basil",
    "tomatoes",
    "violin",
    "marathon",
    "pottery",
    "chess",
    "sailing",
    "baking",
    "birding",
    "fencing",
    "origami",
    "cycling",
]


def remember_topics(services, agent, clock) -> None:
    """Old messages, one per topic, already out of the context window (as eviction leaves them)."""
    ids = []
    for topic in TOPICS:
        text = f"My {topic} story: " + f"I love {topic} and talk about {topic} with friends every week. " * 3
        ids.append(
            services.memory.recall.add(
                agent.id,
                role="user",
                kind="user_message",
                content=json.dumps({"type": "user_message", "message": text}),
                created_at=clock.now(),
                search_text=text,
            ).id
        )
        clock.advance(days=1)  # a day each: each memory on a line of its own
    services.agents.update(agent.id, context_start_id=ids[-1] + 1, evicted_count=len(ids))
    clock.advance(days=2)


def memories_in(prompt) -> list[str]:
    return [m.content for m in prompt if m.content.startswith('{"type": "memories"')]


def last_user_message(prompt) -> int:
    return max(n for n, m in enumerate(prompt) if m.content.startswith('{"type": "user_message"'))


class Evictions(AgentObserver):
    """Where each eviction happened: the index of the first prompt after it."""

    def __init__(self, runtime: ScriptedRuntime) -> None:
        self.runtime = runtime
        self.at: list[int] = []

    def on_event(self, kind: str, text: str) -> None:
        if kind == "eviction":
            self.at.append(len(self.runtime.prompts))


def turn(agent, runtime, clock, text: str, reply: str) -> None:
    runtime.enqueue(say(reply), say("(after the memory pressure alert)"))
    agent.send_user_message(text)
    runtime.clear()
    clock.advance(minutes=1)


def chat_until_an_eviction(agent, runtime, clock, evictions: Evictions) -> int:
    """One turn per topic until an eviction happens; the index of the first prompt after it."""
    for topic in TOPICS:
        turn(agent, runtime, clock, f"what about my {topic}?", f"Tell me more about {topic}.")
        if evictions.at:
            return evictions.at[0]
    raise AssertionError("no eviction happened")


def window_for(make_agent, room: int) -> int:
    """A window with ``room`` tokens for the messages above a fresh agent's prompt and the reserve."""
    base = make_agent("probe", runtime=ScriptedRuntime(context_window=100_000)).budget().used
    return base + Settings().max_answer_tokens + room


def small_agent(services, make_agent, clock):
    """Room for about seven turns, each with a memories event of some 340 tokens."""
    runtime = ScriptedRuntime(
        context_window=window_for(make_agent, 1500), summaries=[f"Summary {n}." for n in range(20)]
    )
    evictions = Evictions(runtime)
    agent = make_agent("expiring", runtime=runtime, settings=Settings(auto_recall_budget=0.04), observer=evictions)
    remember_topics(services, agent, clock)
    return agent, runtime, evictions


def test_each_prompt_starts_with_the_whole_previous_one_until_a_new_section_needs_room(services, make_agent, clock):
    agent, runtime, evictions = small_agent(services, make_agent, clock)
    chat_until_an_eviction(agent, runtime, clock, evictions)
    prompts = runtime.prompts
    changed = next(n for n in range(1, len(prompts)) if prompts[n][: len(prompts[n - 1])] != prompts[n - 1])
    assert changed >= 3  # several turns, each with its memories event, before the first change
    assert all(EXPIRED not in m for prompt in prompts[:changed] for m in memories_in(prompt))
    assert len(memories_in(prompts[changed - 1])) >= 3
    # What changed it: the earlier sections expired to make room for the new one, and that was
    # enough: nothing of the conversation left with them (the eviction came turns later).
    assert EXPIRED in memories_in(prompts[changed]) and evictions.at[0] > changed
    conversation = [m for m in prompts[changed - 1] if m.content.startswith('{"type": "user_message"')]
    assert all(m in prompts[changed] for m in conversation)


def test_an_eviction_expires_every_memories_event_but_the_newest(services, make_agent, clock):
    agent, runtime, evictions = small_agent(services, make_agent, clock)
    evicted_at = chat_until_an_eviction(agent, runtime, clock, evictions)
    prompt = runtime.prompts[evicted_at]
    shown = memories_in(prompt)
    assert len(shown) >= 2, "the eviction should keep an older memories event in context"
    assert all(content == EXPIRED for content in shown[:-1])
    newest = json.loads(shown[-1])
    assert (
        newest["memories"] and prompt[last_user_message(prompt) + 1].content == shown[-1]
    )  # whole, after the user's message
    # The store keeps every event whole, with what it showed: only the prompt shows the stub.
    events = [m for m in services.memory.recall.all(agent.id) if m.kind == "memories"]
    assert all(json.loads(e.content)["memories"] for e in events)
    assert all(agent.shown.shown_by(e.id) for e in events)
    record = services.agents.get(agent.id)
    assert events[-2].id < record.recall_expired_before <= events[-1].id
    # The budget panel measures the prompt the model gets: stubs, not the full sections.
    budget = agent.budget()
    assert budget.used == runtime.count_prompt(agent.prompt.parts().chat_messages())


def test_after_an_eviction_the_prompt_grows_again_without_changing(services, make_agent, clock):
    agent, runtime, evictions = small_agent(services, make_agent, clock)
    evicted_at = chat_until_an_eviction(agent, runtime, clock, evictions)
    turn(agent, runtime, clock, "and what about my basil, again?", "Noted.")
    assert evictions.at == [evicted_at], "the next turn should fit without evicting"
    after, following = runtime.prompts[evicted_at], runtime.prompts[-1]
    assert following[: len(after)] == after  # the section that stayed whole stays whole until the next eviction
    assert memories_in(following)[-2] == memories_in(after)[-1] != EXPIRED


def expired_and_newest(services, agent, prompt) -> tuple[set[str], list[str]]:
    """What the expired events in ``prompt`` had shown, and the newest section's lines."""
    record = services.agents.get(agent.id)
    events = [m for m in services.memory.recall.since(agent.id, record.context_start_id) if m.kind == "memories"]
    expired = {s.text for e in events if e.id < record.recall_expired_before for s in agent.shown.shown_by(e.id)}
    return expired, json.loads(memories_in(prompt)[-1])["memories"]


def test_an_expired_memory_may_be_shown_again(services, make_agent, clock):
    agent, runtime, evictions = small_agent(services, make_agent, clock)
    evicted_at = chat_until_an_eviction(agent, runtime, clock, evictions)
    expired, _newest = expired_and_newest(services, agent, runtime.prompts[evicted_at])
    assert expired, "an expired event should still be in context, as its stub"
    # Its memories no longer count as in view: a new section may show them again (asked about
    # their topic, so that it does not depend on which turn the eviction fell).
    topic = next(t for t in TOPICS if any(text.startswith(f"My {t} story") for text in expired))
    turn(agent, runtime, clock, f"My {topic} story, again?", "Sure.")
    newest = json.loads(memories_in(runtime.prompts[-1])[-1])["memories"]
    assert any(line.endswith("] " + text) for text in expired for line in newest)


def test_a_section_that_needs_an_eviction_is_searched_after_it(services, make_agent, clock):
    """The search leaves out what is in view; when the section then needs an eviction, the search
    runs again so the messages that eviction took out of view can come back."""
    agent, runtime, evictions = small_agent(services, make_agent, clock)
    evicted_at = chat_until_an_eviction(agent, runtime, clock, evictions)
    before, after = runtime.prompts[evicted_at - 1], runtime.prompts[evicted_at]
    taken = [
        json.loads(m.content)["message"]
        for m in before
        if m not in after and m.content.startswith('{"type": "user_message"')
    ]
    _expired, newest = expired_and_newest(services, agent, after)
    assert any(text in line for text in taken for line in newest)  # the day's line, or its own


def test_the_summarizer_is_not_asked_to_summarize_memories_events(services, make_agent, clock):
    agent, runtime, evictions = small_agent(services, make_agent, clock)
    chat_until_an_eviction(agent, runtime, clock, evictions)
    assert runtime.text_prompts, "the eviction should have asked for a summary"
    asked = "\n".join(m.content for prompt in runtime.text_prompts for m in prompt)
    assert "what about my" in asked  # the evicted conversation is summarized
    assert '"type": "memories"' not in asked and "story: I love" not in asked


def test_without_automatic_recall_nothing_expires(services, make_agent, clock):
    runtime = ScriptedRuntime(context_window=window_for(make_agent, 600))
    evictions = Evictions(runtime)
    agent = make_agent("plain", runtime=runtime, settings=Settings(auto_recall=False), observer=evictions)
    remember_topics(services, agent, clock)
    chat_until_an_eviction(agent, runtime, clock, evictions)
    assert services.agents.get(agent.id).recall_expired_before == 0
