"""Automatic recall packs its memories tightly (memdesk.core.agent.recall.packing): a day's
conversation shares one line and one date, in the order it was said, so a budget holds more."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from memdesk.core.agent.recall.events import NOTE, render_event
from memdesk.core.agent.recall.packing import pack, render_lines
from memdesk.core.agent.recall.sources import CONVERSATION, Memory
from memdesk.core.runtime.scripted import ScriptedRuntime

DAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def said(n: int, who: str, text: str, at: datetime) -> Memory:
    return Memory(CONVERSATION, f"message:{n}", text, at, who)


def test_a_days_memories_share_one_line_in_the_order_they_were_said():
    answer = said(2, "Melanie", "That sounds powerful!", DAY + timedelta(seconds=1))
    question = said(1, "Caroline", "I went to a support group yesterday.", DAY)
    other_day = said(9, "Caroline", "I started a pottery class.", DAY + timedelta(days=30))
    lines = render_lines([(answer, answer.text), (other_day, other_day.text), (question, question.text)], CONVERSATION)
    assert lines == [
        "[8 May 2023] Caroline: I went to a support group yesterday.\nMelanie: That sounds powerful!",
        "[7 Jun 2023, Caroline] I started a pottery class.",  # alone on its day: a line of its own
    ]


def test_a_passage_keeps_its_own_line_with_its_source():
    passage = Memory("archival", "passage:1", "Basil likes morning sun.", DAY, "notes.pdf p. 2")
    chat = said(1, "Caroline", "My basil wilts.", DAY)
    assert render_lines([(passage, passage.text), (chat, chat.text)], CONVERSATION) == [
        "[8 May 2023, archival, notes.pdf p. 2] Basil likes morning sun.",
        "[8 May 2023, Caroline] My basil wilts.",
    ]


def test_a_version_of_a_fact_keeps_its_own_line_and_its_mark():
    older = said(1, "Ada", "The repository has 150 commits.", DAY)
    chat = said(2, "Orla", "Nice progress!", DAY + timedelta(seconds=1))
    newer = Memory(
        CONVERSATION,
        "message:3",
        "The repository has 165 commits.",
        DAY + timedelta(seconds=2),
        "Ada",
        version="update of 8 May 2023",
    )
    lines = render_lines([(newer, newer.text), (older, older.text), (chat, chat.text)], CONVERSATION)
    assert lines[0] == "[8 May 2023, Ada; update of 8 May 2023] The repository has 165 commits."  # newest first, marked
    assert "150 commits" in lines[1] and "165" not in lines[1]


def packed(found, budget, runtime, item_tokens=None):
    return pack(
        found,
        skip=lambda m: False,
        budget=budget,
        item_tokens=item_tokens or budget,
        max_hits=100,
        grouped_source=CONVERSATION,
        count_tokens=runtime.count_tokens,
        truncate=lambda text, tokens: text[:tokens],
        render=lambda lines: render_event(lines, NOTE),
    )


def test_the_same_budget_holds_more_memories_than_a_line_each():
    runtime = ScriptedRuntime()
    found = [
        said(
            n,
            "Caroline" if n % 2 else "Melanie",
            f"line {n} about the camping trip by the lake",
            DAY + timedelta(seconds=n),
        )
        for n in range(40)
    ]
    budget = runtime.count_tokens(render_event([m.line() for m in found[:12]], NOTE))  # twelve lines of their own
    placed, lines = packed(found, budget, runtime)
    assert len(placed) > 12 and placed == found[: len(placed)]  # more of them, best first
    assert runtime.count_tokens(render_event(lines, NOTE)) <= budget
    assert all(m.text in json.loads(json.dumps(lines))[0] for m in placed)  # each one's words whole


def test_a_memory_that_does_not_fit_leaves_room_for_a_shorter_one():
    runtime = ScriptedRuntime()
    long = said(1, "Caroline", "camping " * 200, DAY)
    short = said(2, "Melanie", "We camped by the lake.", DAY + timedelta(days=3))
    budget = runtime.count_tokens(render_event([short.line()], NOTE)) + 2
    placed, lines = packed([long, short], budget, runtime, item_tokens=10 * budget)  # not cut to fit
    assert placed == [short] and lines == [short.line()]
