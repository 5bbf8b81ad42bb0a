"""The stream parser surfaces inner thoughts and send_message's text while the JSON is generated."""

from __future__ import annotations

import json
from itertools import groupby

from memdesk.core.runtime.streaming import CallStreamParser


def streamed(text: str, step: int = 3) -> list[tuple[str, str]]:
    parser = CallStreamParser()
    events = []
    for start in range(0, len(text), step):
        events += parser.feed(text[start : start + step])
    return [(kind, "".join(e.text for e in group)) for kind, group in groupby(events, key=lambda e: e.kind)]


def test_thoughts_and_message_arrive_decoded_in_pieces():
    text = json.dumps(
        {"function": "send_message", "params": {"inner_thoughts": 'say "hi" \u00e9', "message": "Hi\nthere \u263a"}}
    )
    assert streamed(text) == [("thought", 'say "hi" é'), ("message", "Hi\nthere ☺")]


def test_the_message_argument_of_other_functions_is_not_shown_to_the_user():
    text = json.dumps(
        {
            "function": "message_chatgpt",
            "params": {"inner_thoughts": "ask", "message": "What is 2+2?", "request_heartbeat": True},
        }
    )
    assert streamed(text) == [("thought", "ask")]


def test_non_string_values_and_other_keys_are_silent():
    text = json.dumps(
        {
            "function": "core_memory_append",
            "params": {"inner_thoughts": "save", "label": "human", "content": "x", "request_heartbeat": False},
        }
    )
    assert streamed(text, step=1) == [("thought", "save")]
