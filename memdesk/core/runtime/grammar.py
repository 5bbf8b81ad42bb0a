"""A GBNF grammar for one function call, built from the live tool specs at every step.

The grammar admits exactly the JSON the agent expects:
``{"function": NAME, "params": {"inner_thoughts": "...", ...arguments, "request_heartbeat": bool}}``
with keys in a fixed order and the separators ``json.dumps`` writes by default (", " and ": "), so
there is no free whitespace for a small model to wander into and every output parses. Optional
arguments may be left out; they keep their place in the order when present, which keeps the
grammar unambiguous.

The grammar is first built as a small tree of nodes. The same tree renders to GBNF for llama.cpp
and can draw random sentences (``sample``) so tests can check that everything the grammar admits
is valid JSON matching the schema.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memdesk.core.base.errors import ModelError
from memdesk.core.runtime.base import ToolSpec

HEARTBEAT = "request_heartbeat"
THOUGHTS = "inner_thoughts"
ITEM_SEP, KEY_SEP = ", ", ": "
_MAX_SAMPLE_DEPTH = 8
_MAX_BOUNDED_CHARS = 2000


@dataclass(frozen=True)
class Limits:
    """Upper bounds that keep a runaway model from filling the context with one value."""

    thoughts_chars: int = 800
    string_chars: int = 2000
    array_items: int = 16
    integer_digits: int = 15


# --- grammar tree ------------------------------------------------------------------------------
class Node:
    def gbnf(self) -> str:
        raise NotImplementedError

    def sample(self, rng: random.Random, rules: dict[str, Node], depth: int = 0) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Lit(Node):
    text: str

    def gbnf(self) -> str:
        return json.dumps(self.text)  # a JSON string literal is also a valid GBNF literal

    def sample(self, rng: random.Random, rules: dict[str, Node], depth: int = 0) -> str:
        return self.text


@dataclass(frozen=True)
class Chars(Node):
    """A character class, written in GBNF syntax, with the characters ``sample`` may draw."""

    gbnf_class: str
    examples: str

    def gbnf(self) -> str:
        return self.gbnf_class

    def sample(self, rng: random.Random, rules: dict[str, Node], depth: int = 0) -> str:
        return rng.choice(self.examples)


@dataclass(frozen=True)
class Seq(Node):
    items: tuple[Node, ...]

    def gbnf(self) -> str:
        return "(" + " ".join(item.gbnf() for item in self.items) + ")"

    def sample(self, rng: random.Random, rules: dict[str, Node], depth: int = 0) -> str:
        return "".join(item.sample(rng, rules, depth) for item in self.items)


@dataclass(frozen=True)
class Alt(Node):
    options: tuple[Node, ...]

    def gbnf(self) -> str:
        return "(" + " | ".join(option.gbnf() for option in self.options) + ")"

    def sample(self, rng: random.Random, rules: dict[str, Node], depth: int = 0) -> str:
        # Deep inside free-form values, take the first option (a string): sentences stay finite.
        option = self.options[0] if depth > _MAX_SAMPLE_DEPTH else rng.choice(self.options)
        return option.sample(rng, rules, depth)


@dataclass(frozen=True)
class Rep(Node):
    item: Node
    low: int
    high: int

    def gbnf(self) -> str:
        return f"{self.item.gbnf()}{{{self.low},{self.high}}}"

    def sample(self, rng: random.Random, rules: dict[str, Node], depth: int = 0) -> str:
        count = self.low if depth > _MAX_SAMPLE_DEPTH else rng.randint(self.low, min(self.high, self.low + 12))
        return "".join(self.item.sample(rng, rules, depth) for _ in range(count))


@dataclass(frozen=True)
class Ref(Node):
    name: str

    def gbnf(self) -> str:
        return self.name

    def sample(self, rng: random.Random, rules: dict[str, Node], depth: int = 0) -> str:
        return rules[self.name].sample(rng, rules, depth + 1)


def _seq(*items: Node) -> Node:
    return Seq(tuple(items))


def _opt(item: Node) -> Node:
    return Rep(item, 0, 1)


# --- JSON value rules ----------------------------------------------------------------------------
_PLAIN = Chars(r'[^"\\\x00-\x1F\x7F]', "abcxyz ABC019.,!?'-éß€")
_ESCAPE = _seq(
    Lit("\\"),
    Alt((Chars(r'["\\/bfnrt]', '"\\/bfnrt'), _seq(Lit("u"), Rep(Chars("[0-9a-fA-F]", "0123456789abcdef"), 4, 4)))),
)
_CHAR = Alt((_PLAIN, _ESCAPE))
#: ``"format": "phrase"``: a few words (a relation, a label) that start with a letter and hold only
#: letters, spaces, apostrophes and hyphens, so cleaning the value can never leave it empty.
PHRASE = "phrase"
_PHRASE_FIRST = Chars("[a-zA-Z\u00c0-\u024f]", "abcXYZéß")
_PHRASE_REST = Chars("[a-zA-Z\u00c0-\u024f '-]", "abc XYZ'-é")


def _base_rules(limits: Limits) -> dict[str, Node]:
    digits = Chars("[0-9]", "0123456789")
    integer = Alt((Lit("0"), _seq(_opt(Lit("-")), Chars("[1-9]", "123456789"), Rep(digits, 0, limits.integer_digits))))
    fraction = _opt(_seq(Lit("."), Rep(digits, 1, limits.integer_digits)))
    exponent = _opt(_seq(Chars("[eE]", "eE"), _opt(Chars("[-+]", "-+")), Rep(digits, 1, 2)))
    value = Alt((Ref("string"), Ref("number"), Ref("boolean"), Lit("null"), Ref("object"), Ref("array")))
    member = _seq(Ref("string"), Lit(KEY_SEP), Ref("value"))
    return {
        "char": _CHAR,
        "string": _seq(Lit('"'), Rep(Ref("char"), 0, limits.string_chars), Lit('"')),
        "thought": _seq(Lit('"'), Rep(Ref("char"), 0, limits.thoughts_chars), Lit('"')),
        "integer": integer,
        "number": _seq(integer, fraction, exponent),
        "boolean": Alt((Lit("true"), Lit("false"))),
        "strings": _seq(
            Lit("["),
            _opt(_seq(Ref("string"), Rep(_seq(Lit(ITEM_SEP), Ref("string")), 0, limits.array_items - 1))),
            Lit("]"),
        ),
        # Free-form values only for arguments typed as a plain dict; depth is bounded by max_tokens.
        "value": value,
        "object": _seq(
            Lit("{"), _opt(_seq(member, Rep(_seq(Lit(ITEM_SEP), member), 0, limits.array_items - 1))), Lit("}")
        ),
        "array": _seq(
            Lit("["),
            _opt(_seq(Ref("value"), Rep(_seq(Lit(ITEM_SEP), Ref("value")), 0, limits.array_items - 1))),
            Lit("]"),
        ),
    }


def _value_node(tool: str, name: str, schema: dict[str, Any]) -> Node:
    if "enum" in schema:
        values = list(schema["enum"])
        if not values:
            raise ModelError(f"Tool {tool}: argument {name} has an empty enum")
        return Alt(tuple(Lit(json.dumps(value, ensure_ascii=False)) for value in values))
    kind = schema.get("type", "string")
    if kind == "array":
        items = schema.get("items", {"type": "string"})
        if items.get("type", "string") != "string" or "enum" in items:
            return Ref("array")
        return Ref("strings")
    if kind == "string" and (PHRASE == schema.get("format") or "maxLength" in schema or "minLength" in schema):
        return _bounded_string(tool, name, schema)
    simple = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean", "object": "object"}
    if kind not in simple:
        raise ModelError(f"Tool {tool}: argument {name} has a type the grammar cannot express: {kind!r}")
    return Ref(simple[kind])


def _bounded_string(tool: str, name: str, schema: dict[str, Any]) -> Node:
    """A string argument with ``minLength``/``maxLength`` (and the ``phrase`` format) in the grammar itself."""
    low, high = int(schema.get("minLength", 0)), int(schema.get("maxLength", _MAX_BOUNDED_CHARS))
    if not 0 <= low <= high or high > _MAX_BOUNDED_CHARS:
        raise ModelError(f"Tool {tool}: argument {name} has string bounds the grammar cannot express: {low}..{high}")
    if schema.get("format") != PHRASE:
        return _seq(Lit('"'), Rep(Ref("char"), low, high), Lit('"'))
    if high == 0:
        raise ModelError(f"Tool {tool}: argument {name} is a phrase of at most 0 characters")
    return _seq(Lit('"'), _PHRASE_FIRST, Rep(_PHRASE_REST, max(low - 1, 0), high - 1), Lit('"'))


def _call_node(spec: ToolSpec, heartbeat: bool) -> Node:
    properties: dict[str, Any] = dict(spec.parameters.get("properties", {}))
    required = set(spec.parameters.get("required", []))
    parts: list[Node] = [
        Lit(f'{json.dumps(spec.name)}{ITEM_SEP}"params"{KEY_SEP}{{"{THOUGHTS}"{KEY_SEP}'),
        Ref("thought"),
    ]
    for name, schema in properties.items():
        if name in (THOUGHTS, HEARTBEAT):
            continue
        member = _seq(Lit(f"{ITEM_SEP}{json.dumps(name)}{KEY_SEP}"), _value_node(spec.name, name, schema))
        parts.append(member if name in required else _opt(member))
    if heartbeat:
        parts.append(Lit(f'{ITEM_SEP}"{HEARTBEAT}"{KEY_SEP}'))
        parts.append(Ref("boolean"))
    parts.append(Lit("}"))
    return Seq(tuple(parts))


@dataclass(frozen=True)
class CallGrammar:
    rules: dict[str, Node]

    @property
    def text(self) -> str:
        """The GBNF source, ``root`` first."""
        return "\n".join(f"{name} ::= {node.gbnf()}" for name, node in self.rules.items()) + "\n"

    def sample(self, seed: int = 0) -> str:
        return self.rules["root"].sample(random.Random(seed), self.rules)


def build_call_grammar(
    tools: Sequence[ToolSpec], heartbeat_tools: frozenset[str] = frozenset(), limits: Limits = Limits()
) -> CallGrammar:
    if not tools:
        raise ModelError("Cannot build a call grammar without any tool")
    names = [tool.name for tool in tools]
    if len(set(names)) != len(names):
        raise ModelError(f"Duplicate tool names in {names}")
    rules: dict[str, Node] = {}
    calls = []
    for index, spec in enumerate(tools):
        rule = f"call-{index}"
        rules[rule] = _call_node(spec, spec.name in heartbeat_tools)
        calls.append(Ref(rule))
    root = _seq(Lit(f'{{"function"{KEY_SEP}'), Alt(tuple(calls)), Lit("}"))
    return CallGrammar({"root": root, **rules, **_base_rules(limits)})


def call_opening(name: str) -> str:
    """The fixed text of a call up to the first character of its inner thoughts."""
    return f'{{"function"{KEY_SEP}{json.dumps(name)}{ITEM_SEP}"params"{KEY_SEP}{{"{THOUGHTS}"{KEY_SEP}"'


def after_thoughts(spec: ToolSpec, heartbeat: bool) -> str:
    """The fixed text of a call right after its inner thoughts close, up to the next choice the
    grammar leaves: the first argument's key (and the quote a plain string opens with) when that
    argument is required; nothing when it is optional."""
    required = set(spec.parameters.get("required", []))
    for name, schema in spec.parameters.get("properties", {}).items():
        if name in (THOUGHTS, HEARTBEAT):
            continue
        if name not in required:
            return ""
        quote = '"' if schema.get("type", "string") == "string" and "enum" not in schema else ""
        return f"{ITEM_SEP}{json.dumps(name)}{KEY_SEP}{quote}"
    return f'{ITEM_SEP}"{HEARTBEAT}"{KEY_SEP}' if heartbeat else "}}"


def _thoughts_end(generated: str, start: int) -> int:
    """Where the thoughts string that starts at ``start`` closes (its quote), or -1 while open."""
    index = start
    while index < len(generated):
        char = generated[index]
        if char == "\\":
            index += 2
            continue
        if char == '"':
            return index
        index += 1
    return -1


def forced_text(generated: str, tools: Sequence[ToolSpec], heartbeat_tools: frozenset[str] = frozenset()) -> str:
    """What the grammar forces next, when it is fixed text: the call's opening brace and key, then,
    once the function name is closed, everything up to the thoughts, and once the thoughts are
    closed, everything up to the first argument's value (a send_message's text). Writing it
    directly (in one batch) instead of sampling it token by token shortens the time to the first
    streamed thought and to the first character of the reply."""
    head = f'{{"function"{KEY_SEP}"'
    if head.startswith(generated):
        return head[len(generated) :]
    for spec in tools:
        opening = call_opening(spec.name)
        if not generated.startswith(opening[: len(head) + len(json.dumps(spec.name)) - 1]):
            continue
        if opening.startswith(generated):
            return opening[len(generated) :]
        if not generated.startswith(opening):
            continue
        end = _thoughts_end(generated, len(opening))
        if end < 0:
            return ""
        after, written = after_thoughts(spec, spec.name in heartbeat_tools), generated[end + 1 :]
        return after[len(written) :] if after.startswith(written) else ""
    return ""
