"""Automatic recall on the scripted runtime: what the memories event holds, its budget, where it
sits in the prompt, what it leaves out, and that a slow or broken search never holds up a reply."""

from __future__ import annotations

import json
import logging
import threading
from datetime import timedelta

import pytest

from memdesk.core.agent.recall.events import NOTE, NOTHING_NOTE
from memdesk.core.agent.recall.search import AutoRecall, RecallSettings
from memdesk.core.agent.recall.sources import ArchivalSource, ConversationSource, Memory
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say


def forget(services, agent, clock, texts: list[str]) -> list[int]:
    """Old user messages, already evicted from the context window (as eviction leaves them)."""
    ids = []
    for text in texts:
        message = services.memory.recall.add(
            agent.id,
            role="user",
            kind="user_message",
            content=json.dumps({"type": "user_message", "message": text}),
            created_at=clock.now(),
            search_text=text,
        )
        ids.append(message.id)
        clock.advance(minutes=1)
    services.agents.update(agent.id, context_start_id=ids[-1] + 1, evicted_count=len(ids))
    clock.advance(days=3)
    return ids


def memories_events(services, agent) -> list[dict]:
    return [json.loads(m.content) for m in services.memory.recall.all(agent.id) if m.kind == "memories"]


def test_evicted_messages_and_archival_passages_come_back_with_dates_and_sources(services, runtime, make_agent, clock):
    agent = make_agent()
    forget(services, agent, clock, ["My basil wilts in the afternoon sun", "I work night shifts at the hospital"])
    services.memory.archival.insert(agent.id, "Basil likes morning sun and moist soil.")
    runtime.enqueue(say("Move the basil into the shade after noon."))
    agent.send_user_message("Why does my basil wilt?")
    prompt = runtime.prompts[0]
    assert json.loads(prompt[-2].content)["message"] == "Why does my basil wilt?"
    event = json.loads(prompt[-1].content)  # right after the user's message, before the model's turn
    assert event["type"] == "memories" and "automatically" in event["note"]
    lines = event["memories"]
    at = clock.now() - timedelta(days=3, minutes=2)
    # dated and attributed: a line of its own, or its day's shared line (agent.recall_packing)
    assert lines[0].startswith(
        (f"[{at.day} {at:%b %Y}, user] My basil wilts", f"[{at.day} {at:%b %Y}] user: My basil wilts")
    )
    today = clock.now()
    assert any(line.startswith(f"[{today.day} {today:%b %Y}, archival] Basil likes morning sun") for line in lines)
    assert agent.last_recall.status == "placed"
    # Stored with the event: what this reply had in front of it.
    event_row = [m for m in services.memory.recall.all(agent.id) if m.kind == "memories"][0]
    shown = agent.shown.shown_by(event_row.id)
    assert [s.source for s in shown][:2] == ["conversation", "archival"] and shown[0].text.startswith("My basil")


def test_the_event_keeps_the_conversation_cached_and_stays_in_the_queue(services, runtime, make_agent, clock):
    agent = make_agent()
    runtime.enqueue(say("Hello"))
    agent.send_user_message("hello")
    forget(services, agent, clock, ["I grow tomatoes on the balcony"])
    runtime.enqueue(say("Tomatoes!"), say("Still tomatoes."))
    agent.send_user_message("what do I grow on my balcony?")
    agent.send_user_message("and where?")
    first, second, third = runtime.prompts
    # Appended after the user's message: each prompt starts with the whole previous one.
    assert second[:2] == first[:2]  # static part and memory section unchanged
    assert third[: len(second)] == second


def test_the_section_fits_its_budget(services, make_agent, clock):
    runtime = ScriptedRuntime(context_window=8192)
    agent = make_agent(runtime=runtime, settings=Settings(auto_recall_budget=0.025))
    forget(services, agent, clock, [f"garden note {n}: " + "compost and worms " * 60 for n in range(6)])
    runtime.enqueue(say("ok"))
    agent.send_user_message("what did my garden notes say about compost?")
    event = [m for m in services.memory.recall.all(agent.id) if m.kind == "memories"][0]
    assert runtime.count_tokens(event.content) <= 0.025 * 8192
    lines = json.loads(event.content)["memories"]
    assert 1 <= len(lines) < 6 and "truncated" in lines[0]  # long memories are cut, the rest left out
    budget = agent.budget()
    assert 0 < budget.tokens("recall") <= 0.025 * 8192 + 8
    assert budget.used == runtime.count_prompt(agent.prompt.parts().chat_messages())  # sections add up


def test_the_section_is_filled_in_rank_order_until_its_budget_is_spent(services, make_agent, clock):
    runtime = ScriptedRuntime(context_window=8192)
    agent = make_agent(runtime=runtime, settings=Settings(auto_recall_budget=0.05))
    notes = []
    for n in range(60):  # each on a day of its own: one line each
        notes += forget(services, agent, clock, [f"garden note {n}: compost worms and leaves"])
    runtime.enqueue(say("ok"))
    agent.send_user_message("what are my garden notes about compost?")
    event = [m for m in services.memory.recall.all(agent.id) if m.kind == "memories"][0]
    lines = json.loads(event.content)["memories"]
    used = runtime.count_tokens(event.content)
    budget = 0.05 * 8192
    assert used <= budget and len(lines) > 5  # many short memories, not a fixed handful
    one_more = runtime.count_tokens(json.dumps(lines[-1])) + 2
    assert used + one_more > budget  # and no room was left for another


def test_what_the_model_already_sees_is_not_repeated(services, runtime, make_agent, clock):
    agent = make_agent()
    forget(services, agent, clock, ["My cat is called Tom"])
    services.memory.archival.insert(agent.id, "The user's cat Tom sleeps on the basil pots.")
    runtime.enqueue(call("archival_memory_search", "look", True, query="cat"), say("Tom!"))
    agent.send_user_message("tell me about my cat")  # shows both; the search result shows the passage too
    runtime.enqueue(say("Tom again"))
    agent.send_user_message("my cat, once more")
    events = memories_events(services, agent)
    assert len(events) == 1  # the second turn found only what the queue already shows
    assert agent.last_recall.status == "nothing"


def test_a_memory_may_come_back_once_its_event_left_the_context(services, runtime, make_agent, clock):
    agent = make_agent()
    forget(services, agent, clock, ["My cat is called Tom"])
    runtime.enqueue(say("Tom!"))
    agent.send_user_message("my cat?")
    last = services.memory.recall.all(agent.id)[-1]
    services.agents.update(agent.id, context_start_id=last.id + 1)  # everything so far evicted
    runtime.enqueue(say("Tom, yes."))
    agent.send_user_message("my cat?")
    assert len(memories_events(services, agent)) == 2


def test_the_off_switch(services, runtime, make_agent, clock):
    agent = make_agent(settings=Settings(auto_recall=False))
    forget(services, agent, clock, ["My cat is called Tom"])
    runtime.enqueue(say("?"))
    agent.send_user_message("my cat?")
    assert agent.recall is None and memories_events(services, agent) == []


def test_only_user_messages_trigger_it(services, runtime, make_agent, clock):
    agent = make_agent()
    forget(services, agent, clock, ["My cat is called Tom"])
    runtime.enqueue(say("Welcome back"), say("Thinking of you"))
    agent.login()
    agent.timed_heartbeat()
    assert memories_events(services, agent) == []


class Slow:
    """A search that answers only when the test lets it (``release``), or fails at once."""

    name = "slow"

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.release, self.done = threading.Event(), threading.Event()
        if fail:
            self.release.set()

    def find(self, agent_id, query, *, first_in_context, limit):
        self.release.wait(60)
        self.done.set()
        if self.fail:
            raise RuntimeError("index unavailable")
        return [Memory("slow", "slow:1", "a late memory", None)]


@pytest.mark.parametrize("source, status", [(Slow(), "timeout"), (Slow(fail=True), "failed")])
def test_a_slow_or_failing_search_never_holds_up_the_reply(services, runtime, make_agent, caplog, source, status):
    agent = make_agent()
    agent.recall = AutoRecall([source], RecallSettings.from_settings(Settings(auto_recall_timeout_ms=200)))
    runtime.enqueue(say("Right away."))
    try:
        with caplog.at_level(logging.WARNING, logger="memdesk.agent.recall"):
            result = agent.send_user_message("hello")
        assert result.replies == ["Right away."] and agent.last_recall.status == status
        # The reply went ahead at the deadline: a search that never answers did not hold it up
        # (checked by what happened, not by a time this machine may or may not meet).
        assert source.done.is_set() == source.fail
        assert memories_events(services, agent) == []
        assert "the reply goes ahead without it" in caplog.text
    finally:
        source.release.set()
        agent.recall.close()


def test_sources_are_pluggable_and_merged_by_rank(services, make_agent):
    class Fixed:
        def __init__(self, name, texts):
            self.name, self.texts = name, texts

        def find(self, agent_id, query, *, first_in_context, limit):
            return [Memory(self.name, f"{self.name}:{n}", text, None) for n, text in enumerate(self.texts)]

    recall = AutoRecall([Fixed("a", ["a1", "a2"]), Fixed("graph", ["g1"])], RecallSettings.from_settings(Settings()))
    assert [m.text for m in recall.search(1, "q", first_in_context=0)] == ["a1", "g1", "a2"]
    recall.add_source(Fixed("late", ["l1"]))
    assert [m.source for m in recall.search(1, "q", first_in_context=0)] == ["a", "graph", "late", "a"]


def test_the_window_panels_get_the_hits_marked_automatic(services, runtime, make_agent, clock):
    from memdesk.core.agent.observer import AgentObserver

    class Hits(AgentObserver):
        def __init__(self):
            self.hits = []

        def on_search_hits(self, hits):
            self.hits.append(hits)

    observer = Hits()
    agent = make_agent(observer=observer)
    forget(services, agent, clock, ["My cat is called Tom"])
    runtime.enqueue(say("Tom"))
    agent.send_user_message("my cat?")
    kind, message = observer.hits[0][0]
    assert kind == "automatic" and message.search_text == "My cat is called Tom"


def test_the_transcript_shows_which_memories_a_reply_had(services, runtime, make_agent, clock):
    from memdesk.core.agent.conversation_view import conversation_entries

    agent = make_agent()
    forget(services, agent, clock, ["My cat is called Tom"])
    runtime.enqueue(say("Tom"))
    agent.send_user_message("my cat?")
    entries = conversation_entries(services.memory.recall.all(agent.id))
    memories = [e for e in entries if e.kind == "memories"]
    assert len(memories) == 1 and "My cat is called Tom" in memories[0].text and memories[0].detail
    assert [e.kind for e in entries][-2:] == ["memories", "agent"]


def test_sources_search_out_of_view_only(services, runtime, make_agent, clock):
    agent = make_agent()
    ids = forget(services, agent, clock, ["old fact about tulips"])
    runtime.enqueue(say("hi"))
    agent.send_user_message("new fact about tulips")
    found = ConversationSource(services.memory.recall).find(agent.id, "tulips", first_in_context=ids[-1] + 1, limit=5)
    assert [m.text for m in found] == ["old fact about tulips"]
    assert ArchivalSource(services.memory.archival).find(agent.id, "tulips", first_in_context=0, limit=5) == []


def test_inside_a_rolled_back_transaction_the_search_runs_inline(services, runtime, make_agent, clock):
    """The LoCoMo eval asks each question in a transaction it rolls back: a search thread would
    wait for that transaction until the deadline and find nothing."""
    agent = make_agent(settings=Settings(auto_recall_timeout_ms=100))
    forget(services, agent, clock, ["My cat is called Tom"])
    runtime.enqueue(say("Tom"))
    with services.db.dry_run():
        agent.send_user_message("my cat?")
        assert agent.last_recall.status == "placed"
        assert "My cat is called Tom" in runtime.prompts[-1][-1].content
    assert memories_events(services, agent) == []  # rolled back with the question


def test_a_detail_deep_in_a_long_message_comes_back_as_that_part_with_a_pointer_to_the_whole(
    services, runtime, make_agent, clock
):
    agent = make_agent()
    plan = "\n".join(
        f"Step {n}: configure the worker pool and the retry queue for stage {n} of the rollout." for n in range(1, 60)
    )
    plan += "\nThe staging database password rotates every ninety days through the vault.\n"
    plan += "\n".join(f"Check {n}: watch the dashboards and the error budget during stage {n}." for n in range(1, 40))
    forget(services, agent, clock, [plan, "I like green tea in the morning"])
    runtime.enqueue(say("Every ninety days."))
    agent.send_user_message("How often does the staging database password rotate?")
    (line,) = [m for m in json.loads(runtime.prompts[0][-1].content)["memories"] if "password" in m]
    assert "The staging database password rotates every ninety days through the vault." in line
    assert len(line) < len(plan) / 3  # the part that answers, not the whole plan
    day = (clock.now() - timedelta(days=3, minutes=2)).date().isoformat()
    assert line.endswith(f"(part of a {len(plan):,}-character message; conversation_search_date {day} shows it whole)")


def said(services, agent, clock, lines: list[tuple[str, str]]) -> None:
    """Old messages of a two-person conversation (author, text), already evicted."""
    ids = []
    for author, text in lines:
        message = services.memory.recall.add(
            agent.id,
            role="user",
            kind="user_message",
            content=json.dumps({"type": "user_message", "message": text}),
            created_at=clock.now(),
            search_text=text,
            author=author,
        )
        ids.append(message.id)
        clock.advance(minutes=1)
    services.agents.update(agent.id, context_start_id=ids[-1] + 1, evicted_count=len(ids))
    clock.advance(days=3)


def test_the_section_says_plainly_when_nothing_found_answers_the_question(services, runtime, make_agent, clock):
    agent = make_agent()
    said(
        services,
        agent,
        clock,
        [
            ("Caroline", "Since my charity race I realize self-care matters."),
            ("Melanie", "I signed up for a pottery class yesterday."),
        ],
    )
    runtime.enqueue(say("I don't remember that."), say("That self-care matters."))
    agent.send_user_message("What did Melanie realize after her charity race?")  # Caroline ran it
    assert agent.last_recall.status == "placed" and agent.last_recall.nothing_clear
    (asked_wrong,) = memories_events(services, agent)
    assert asked_wrong["note"] == NOTHING_NOTE
    assert any("charity race" in line for line in asked_wrong["memories"])  # what was found is still shown
    services.agents.update(agent.id, context_start_id=services.memory.recall.all(agent.id)[-1].id + 1)
    agent.send_user_message("What did Caroline realize after her charity race?")
    # answered (support.py's score is 1.0: one hit of hers tells every word; the shipped judge agrees)
    assert not agent.last_recall.nothing_clear and agent.last_recall.support > 0
    assert memories_events(services, agent)[-1]["note"] == NOTE
