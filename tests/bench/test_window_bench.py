"""bench.window's floor of the first reply: the model's own work on the turn, at the speeds measured
in its steps, so what the window adds (a model still loading, a warm-up the turn waited for) is
what is left of the wait, whatever the machine's load."""

from __future__ import annotations

from types import SimpleNamespace

from bench.window import _first_reply_floor
from memdesk.core.runtime.base import GenerationStats


class CharTokens:
    """A runtime whose tokenizer gives one token per character."""

    def count_tokens(self, text: str) -> int:
        return len(text)


REPLY = '{"function": "send_message", "params": {"inner_thoughts": "hi", "message": "Hello Ada"}}'
BEFORE_TEXT = len(REPLY[: REPLY.index("Hello")])


def step(function: str, raw: str, **stats):
    return SimpleNamespace(ok=True, function=function, raw=raw, stats=GenerationStats(**stats))


def test_a_one_step_reply_costs_its_evaluation_and_the_tokens_before_its_text():
    reply = step(
        "send_message",
        REPLY,
        prompt_tokens=1500,
        evaluated_tokens=60,
        generated_tokens=len(REPLY),
        seconds=3.0 + len(REPLY) * 0.1,
        evaluation_seconds=3.0,
    )
    floor = _first_reply_floor([reply], CharTokens())
    assert floor == {"seconds": round(60 * 0.05 + BEFORE_TEXT * 0.1, 3), "evaluated_tokens": 60, "prompt_tokens": 1500}


def test_steps_before_the_reply_count_whole_and_steps_after_it_not_at_all():
    edit = step(
        "core_memory_append",
        "{}",
        prompt_tokens=1500,
        evaluated_tokens=50,
        generated_tokens=20,
        seconds=3.0,
        evaluation_seconds=1.0,
    )
    reply = step(
        "send_message",
        REPLY,
        prompt_tokens=1600,
        evaluated_tokens=30,
        generated_tokens=len(REPLY),
        seconds=0.3 + len(REPLY) * 0.1,
        evaluation_seconds=0.3,
    )
    after = step(
        "archival_memory_insert",
        "{}",
        prompt_tokens=1700,
        evaluated_tokens=40,
        generated_tokens=10,
        seconds=9.0,
        evaluation_seconds=4.0,
    )
    floor = _first_reply_floor([edit, reply, after], CharTokens())
    assert floor["seconds"] == round(3.0 + 0.3 + BEFORE_TEXT * 0.1, 3)
    assert floor["evaluated_tokens"] == 80 and floor["prompt_tokens"] == 1600


def test_a_turn_without_a_reply_has_no_floor():
    edit = step(
        "core_memory_append",
        "{}",
        prompt_tokens=1500,
        evaluated_tokens=50,
        generated_tokens=20,
        seconds=3.0,
        evaluation_seconds=1.0,
    )
    assert _first_reply_floor([edit], CharTokens()) is None
