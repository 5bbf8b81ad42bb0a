"""The call grammar: everything it admits is one valid call, in the fixed shape and order."""

from __future__ import annotations

import json
import re

import pytest

from memdesk.core.base.errors import ModelError
from memdesk.core.runtime.base import ToolSpec
from memdesk.core.runtime.grammar import Limits, build_call_grammar, call_opening, forced_text
from tests.runtime.conftest import HEARTBEAT_TOOLS, TOOLS

EXTRA = ToolSpec(
    "odd_types",
    "Every kind of argument.",
    {
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "extra": {"type": "object"},
            "note": {"type": "string"},
        },
        "required": ["count", "ratio", "flag"],
    },
)
ALL = [*TOOLS, EXTRA]
PY_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list, "object": dict}


def check_call(text: str, tools=ALL, heartbeat_tools=HEARTBEAT_TOOLS) -> None:
    call = json.loads(text)
    assert list(call) == ["function", "params"]
    spec = next(t for t in tools if t.name == call["function"])
    params = call["params"]
    keys = list(params)
    assert keys[0] == "inner_thoughts" and isinstance(params["inner_thoughts"], str)
    properties = spec.parameters["properties"]
    arguments = [k for k in properties if k not in ("inner_thoughts", "request_heartbeat")]
    expected_order = [k for k in arguments if k in params]
    if spec.name in heartbeat_tools:
        assert keys[-1] == "request_heartbeat" and isinstance(params["request_heartbeat"], bool)
        expected_order.append("request_heartbeat")
    else:
        assert "request_heartbeat" not in params
    assert keys[1:] == expected_order
    for name in spec.parameters["required"]:
        if name != "request_heartbeat":
            assert name in params
    for name in arguments:
        if name in params:
            schema = properties[name]
            value = params[name]
            assert isinstance(value, PY_TYPES[schema["type"]]) and (
                schema["type"] == "boolean" or not isinstance(value, bool)
            )
            if "enum" in schema:
                assert value in schema["enum"]
            if schema["type"] == "array":
                assert all(isinstance(item, str) for item in value)
    # No free whitespace: outside string literals the text is exactly what json.dumps writes.
    # (Free-form objects may repeat a key; keep every member so nothing collapses.)
    every_member = json.loads(text, object_pairs_hook=lambda pairs: {f"{k}{i}": v for i, (k, v) in enumerate(pairs)})
    assert skeleton(text) == skeleton(json.dumps(every_member))


def skeleton(text: str) -> str:
    """The text with every string literal's content removed and every number as 0."""
    out, in_string, escape = [], False, False
    for char in text:
        if in_string:
            if escape:
                escape = False
            elif char == "\\":
                escape = True
            elif char == '"':
                in_string = False
                out.append(char)
        else:
            out.append(char)
            in_string = char == '"'
    return re.sub(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", "0", "".join(out))  # numbers may be spelt many ways


def test_samples_are_valid_calls_in_the_fixed_shape():
    grammar = build_call_grammar(ALL, HEARTBEAT_TOOLS)
    seen = set()
    for seed in range(400):
        text = grammar.sample(seed)
        check_call(text)
        seen.add(json.loads(text)["function"])
    assert seen == {t.name for t in ALL}


def test_heartbeat_only_for_named_tools():
    grammar = build_call_grammar(TOOLS, frozenset())
    for seed in range(50):
        assert "request_heartbeat" not in grammar.sample(seed)


def test_grammar_text_names_every_function_once():
    text = build_call_grammar(ALL, HEARTBEAT_TOOLS).text
    assert text.startswith("root ::= ")
    for tool in ALL:
        assert text.count(json.dumps(json.dumps(tool.name))[1:-1]) == 1


def test_refuses_what_it_cannot_express():
    with pytest.raises(ModelError):
        build_call_grammar([])
    with pytest.raises(ModelError):
        build_call_grammar([TOOLS[0], TOOLS[0]])
    weird = ToolSpec("weird", "x", {"type": "object", "properties": {"a": {"type": "tuple"}}, "required": []})
    with pytest.raises(ModelError):
        build_call_grammar([weird])


BOUNDED = ToolSpec(
    "record",
    "x",
    {
        "type": "object",
        "properties": {
            "label": {"type": "string", "format": "phrase", "minLength": 2, "maxLength": 12},
            "note": {"type": "string", "minLength": 1, "maxLength": 5},
        },
        "required": ["label", "note"],
    },
)


def test_string_bounds_and_phrases_are_kept_by_everything_the_grammar_admits():
    grammar = build_call_grammar([BOUNDED], limits=Limits(thoughts_chars=7))
    for seed in range(300):
        params = json.loads(grammar.sample(seed))["params"]
        assert len(params["inner_thoughts"]) <= 7
        assert 2 <= len(params["label"]) <= 12
        assert params["label"][0].isalpha() and all(c.isalpha() or c in " '-" for c in params["label"])
        assert 1 <= len(params["note"]) <= 5


def test_refuses_string_bounds_it_cannot_keep():
    for schema in (
        {"type": "string", "minLength": 3, "maxLength": 2},
        {"type": "string", "format": "phrase", "maxLength": 0},
    ):
        spec = ToolSpec("odd", "x", {"type": "object", "properties": {"a": schema}, "required": ["a"]})
        with pytest.raises(ModelError):
            build_call_grammar([spec])


# --- fixed text written without sampling ------------------------------------------------------
WITH_NO_ARGUMENTS = ToolSpec("ping", "Nothing to say.", {"type": "object", "properties": {}, "required": []})


@pytest.mark.parametrize("seed", range(60))
def test_forced_text_is_always_what_the_grammar_admits_next(seed):
    """Whatever a call holds (escaped quotes in its thoughts included), the text forced after any
    prefix of it is exactly how that call goes on: forcing never writes what the model would not."""
    tools = [*ALL, WITH_NO_ARGUMENTS]
    grammar = build_call_grammar(tools, HEARTBEAT_TOOLS | {"ping"})
    sentence = grammar.sample(seed)
    if seed % 3 == 0:  # thoughts holding an escaped quote and a backslash
        sentence = sentence.replace('"inner_thoughts": "', '"inner_thoughts": "say \\"hi\\" \\\\ ', 1)
    for end in range(len(sentence)):
        forced = forced_text(sentence[:end], tools, HEARTBEAT_TOOLS | {"ping"})
        assert sentence[end:].startswith(forced), (sentence[:end], forced)


def test_after_the_thoughts_a_reply_is_forced_up_to_its_first_character():
    opened = call_opening("send_message") + 'greet Ann \\" warmly"'
    assert forced_text(opened, TOOLS, HEARTBEAT_TOOLS) == ', "message": "'
    assert forced_text(opened + ",", TOOLS, HEARTBEAT_TOOLS) == ' "message": "'
    assert forced_text(call_opening("send_message") + "still thinking", TOOLS, HEARTBEAT_TOOLS) == ""
    # An optional first argument leaves a choice: nothing is forced.
    optional = ToolSpec("maybe", "?", {"type": "object", "properties": {"note": {"type": "string"}}, "required": []})
    assert forced_text(call_opening("maybe") + 'x"', [optional]) == ""
