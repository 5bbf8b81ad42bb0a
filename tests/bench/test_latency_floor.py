"""bench.latency's floor: each step's own measured speeds, so a load change during the run moves
the floor with it (a least-squares fit over the run mixed a quiet start with a busy end)."""

from __future__ import annotations

from types import SimpleNamespace

from bench.latency import step_speeds, tokens_before_reply
from memdesk.core.runtime.base import GenerationStats


def step(**stats):
    return SimpleNamespace(stats=GenerationStats(**stats))


def test_a_step_timed_by_the_runtime_gives_its_own_speeds():
    timed = step(prompt_tokens=2000, evaluated_tokens=100, generated_tokens=50, seconds=3.0, evaluation_seconds=1.0)
    assert step_speeds(timed, (9.0, 9.0)) == (0.01, 0.04)


def test_an_untimed_step_falls_back_to_the_fitted_speeds():
    untimed = step(prompt_tokens=2000, evaluated_tokens=100, generated_tokens=50, seconds=3.0)
    assert step_speeds(untimed, (0.02, 0.05)) == (0.02, 0.05)


# --- where the tokens before a reply go -------------------------------------------------------
def chars(text: str) -> int:
    """A tokenizer of one token per character: the split is then exact to the character."""
    return len(text)


def test_a_one_step_reply_spends_its_tokens_on_structure_and_thoughts_only():
    reply = (
        '{"function": "send_message", "params": '
        '{"inner_thoughts": "greet", "message": "Hi Ada!", "remember": "Name: Ada"}}'
    )
    split = tokens_before_reply(chars, [reply])
    opening = '{"function": "send_message", "params": {"inner_thoughts": "greet", "message": "'
    assert split == {"inner_thoughts": 5, "arguments": 0, "structure": len(opening) - 5, "total": len(opening)}


def test_calls_before_the_reply_count_whole_with_their_arguments_apart():
    edit = (
        '{"function": "core_memory_append", "params": '
        '{"inner_thoughts": "save \\"it\\"", "label": "human", "content": "Ada", "request_heartbeat": true}}'
    )
    reply = '{"function": "send_message", "params": {"inner_thoughts": "hi", "message": "Hello"}}'
    split = tokens_before_reply(chars, [edit, reply])
    assert split["total"] == len(edit) + len(reply[: reply.index("Hello")])
    assert split["inner_thoughts"] == len('save \\"it\\"') + len("hi")  # as the model wrote them, escapes included
    assert split["arguments"] == len("human") + len("Ada")  # the heartbeat's flag is structure
    assert split["structure"] == split["total"] - split["inner_thoughts"] - split["arguments"]
