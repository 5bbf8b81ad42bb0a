"""Turn plain Python functions into tools the model can call.

A tool is a function whose first parameter is the ``ToolContext`` (hidden from the model) and whose
other parameters are typed (str, int, float, bool, Literal[...], list[str], optional variants). Its
docstring's first paragraph is the description; an ``Args:`` section (Google style) describes each
parameter. Users add their own tools the same way (see ``load_user_tools``): the user is asked
before each call of theirs unless the function declares itself read-only (``f.read_only = True``).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from memdesk.core.base.errors import ConfigError, ToolError
from memdesk.core.runtime.base import ToolSpec
from memdesk.core.tools.consent_text import with_arguments

#: Functions that end a chain of thought by themselves and so take no ``request_heartbeat``.
NO_HEARTBEAT = frozenset({"send_message", "pause_heartbeats"})

#: What a tool does, for the loop's chain rules (Letta's "tool rules"): after a search the next
#: step may only answer, read, edit memory or page through that search; searches are capped per turn.
ToolKind = Literal["answer", "search", "read", "edit", "other"]

HEARTBEAT_PARAM = "request_heartbeat"
HEARTBEAT_DESCRIPTION = (
    "Request an immediate heartbeat after the function runs. Set to true to chain another "
    "function call (for example to read a search result), false to wait for the user."
)


@dataclass(frozen=True)
class Tool:
    """A callable function. How the loop runs it (see agent/loop.py):

    * ``check(ctx, **arguments)`` runs first and may refuse with a ToolError (a disabled feature,
      a path outside the sandbox), so the user is never asked about a call that cannot run;
    * then, when ``requires_consent``, the user is asked (``consent_summary(arguments)`` says
      what will happen); a denial is a failed call;
    * a tool that ``writes_store`` runs inside the step's short transaction, so a crash loses
      its writes together with the step; every other tool runs before it, outside any
      transaction, so a slow one (network, generation, a dialog) never holds the write lock.
    """

    name: str
    function: Callable[..., Any]
    spec: ToolSpec
    takes_heartbeat: bool
    requires_consent: bool = False
    kind: ToolKind = "other"
    writes_store: bool = True
    check: Callable[..., None] | None = None
    consent_summary: Callable[[dict[str, Any]], str] | None = None

    def describe_call(self, arguments: dict[str, Any]) -> str:
        """What a call will do, in the user's words, for the consent question."""
        if self.consent_summary is not None:
            return self.consent_summary(arguments)
        return with_arguments("run {call}", self.name, arguments)


def _json_type(annotation: Any) -> tuple[dict[str, Any], bool]:
    """JSON schema for a Python annotation, and whether None is allowed."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        optional = len(members) < len(get_args(annotation))
        if len(members) != 1:
            raise ConfigError(f"Unsupported union type {annotation!r} in a tool signature")
        schema, _ = _json_type(members[0])
        return schema, optional
    if origin is Literal:
        values = list(get_args(annotation))
        kinds = {type(v) for v in values}
        base = {str: "string", int: "integer", bool: "boolean"}.get(kinds.pop()) if len(kinds) == 1 else None
        if base is None:
            raise ConfigError(f"Literal values must share one type: {annotation!r}")
        return {"type": base, "enum": values}, False
    if origin in (list, tuple) or annotation in (list, tuple):
        args = get_args(annotation)
        item = _json_type(args[0])[0] if args else {"type": "string"}
        return {"type": "array", "items": item}, False
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}
    if annotation in simple:
        return {"type": simple[annotation]}, False
    raise ConfigError(f"Unsupported parameter type {annotation!r} in a tool signature")


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s*(\w+)\s*(\([^)]*\))?:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    lines = inspect.cleandoc(doc or "").splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section = "description"
    current: str | None = None
    for line in lines:
        if _ARGS_HEADER.match(line):
            section, current = "args", None
            continue
        if section == "description":
            if re.match(r"^\s*(Returns|Raises|Examples?):\s*$", line):
                section = "other"
            elif line.strip() or description:
                description.append(line.strip())
            continue
        if section == "args":
            if re.match(r"^\s*(Returns|Raises|Examples?):\s*$", line):
                section = "other"
                continue
            match = _ARG_LINE.match(line)
            if match and (not line.startswith(" " * 8) or current is None):
                current = match.group(1)
                params[current] = match.group(3).strip()
            elif current and line.strip():
                params[current] += " " + line.strip()
    text = " ".join(" ".join(description).split())
    return text, params


def make_tool(
    function: Callable[..., Any],
    *,
    name: str | None = None,
    requires_consent: bool = False,
    kind: ToolKind = "other",
    writes_store: bool = True,
    check: Callable[..., None] | None = None,
    consent_summary: Callable[[dict[str, Any]], str] | None = None,
) -> Tool:
    """Build a Tool from a function ``f(ctx, arg: type, ...)`` with a Google-style docstring."""
    tool_name = name or function.__name__
    signature = inspect.signature(function)
    hints = typing.get_type_hints(function)
    description, arg_docs = _parse_docstring(function.__doc__ or "")
    if not description:
        raise ConfigError(f"Tool {tool_name} needs a docstring: it is the model's only documentation")
    parameters = list(signature.parameters.values())[1:]  # the first is the ToolContext
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise ConfigError(f"Tool {tool_name}: *args and **kwargs are not allowed")
        if parameter.name not in hints:
            raise ConfigError(f"Tool {tool_name}: parameter {parameter.name} needs a type annotation")
        schema, optional = _json_type(hints[parameter.name])
        if parameter.name in arg_docs:
            schema = {**schema, "description": arg_docs[parameter.name]}
        properties[parameter.name] = schema
        if parameter.default is inspect.Parameter.empty and not optional:
            required.append(parameter.name)
    takes_heartbeat = tool_name not in NO_HEARTBEAT
    if takes_heartbeat:
        properties[HEARTBEAT_PARAM] = {"type": "boolean", "description": HEARTBEAT_DESCRIPTION}
        required.append(HEARTBEAT_PARAM)
    spec = ToolSpec(tool_name, description, {"type": "object", "properties": properties, "required": required})
    return Tool(
        tool_name, function, spec, takes_heartbeat, requires_consent, kind, writes_store, check, consent_summary
    )


class ToolRegistry:
    """The set of tools one agent can call. Names are unique; aliases map old names to tools."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._aliases: dict[str, str] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools or tool.name in self._aliases:
            raise ConfigError(f"A tool named {tool.name} already exists")
        self._tools[tool.name] = tool

    def alias(self, old_name: str, name: str) -> None:
        """Accept ``old_name`` as a call of ``name`` (the seed's older function names)."""
        if name not in self._tools:
            raise ConfigError(f"Cannot alias unknown tool {name}")
        self._aliases[old_name] = name

    def replace(self, tool: Tool) -> None:
        """Put ``tool`` where the tool of its name is, so the prompt lists the functions unchanged."""
        if tool.name not in self._tools:
            raise ConfigError(f"Cannot replace unknown tool {tool.name}")
        self._tools[tool.name] = tool

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)
        for old, target in list(self._aliases.items()):
            if target == name:
                del self._aliases[old]

    def resolve(self, name: str) -> Tool | None:
        return self._tools.get(self._aliases.get(name, name))

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        return [tool.spec for tool in self._tools.values()]

    def heartbeat_tools(self) -> frozenset[str]:
        return frozenset(name for name, tool in self._tools.items() if tool.takes_heartbeat)

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def describe_for_prompt(self, style: str = "signatures", without: frozenset[str] = frozenset()) -> str:
        """The tools section of the system prompt.

        "signatures" (the default) is compact: JSON schemas cost about twice the tokens for the
        same information, and every token of this section is evaluated on a cold start; the
        grammar enforces the exact JSON shape anyway. "json" gives one JSON schema per line, the
        form models trained on Hermes/Qwen-style tool lists have seen; a model's catalog entry
        picks it. ``request_heartbeat`` is explained once instead of once per function. Functions
        named in ``without`` are left out (a model that is not offered them)."""
        return "\n".join(
            [PROMPT_HEADER, *(text for name, text in self.describe_each(style).items() if name not in without)]
        )

    def describe_each(self, style: str = "signatures") -> dict[str, str]:
        """Each tool's part of the tools section, by name (so its cost can be measured)."""
        describe = describe_spec_json if style == "json" else describe_spec
        return {spec.name: describe(spec) for spec in self.specs()}


PROMPT_HEADER = (
    "Every function but send_message and pause_heartbeats also takes request_heartbeat (boolean): "
    "true runs you again right after it (to read a result, or to chain a call), false waits for the user."
)


def describe_spec(spec: ToolSpec) -> str:
    properties = {k: v for k, v in spec.parameters.get("properties", {}).items() if k != HEARTBEAT_PARAM}
    required = set(spec.parameters.get("required", []))
    lines = [f"- {spec.name}({', '.join(properties)}): {spec.description}"]
    for name, schema in properties.items():
        kind = schema.get("type", "any")
        if "enum" in schema:
            kind = " | ".join(json.dumps(v) for v in schema["enum"])
        if kind == "string" and name in required and not schema.get("description"):
            continue  # the signature says all there is: every token here is read on a cold start
        optional = "" if name in required else ", optional"
        description = f": {schema['description']}" if schema.get("description") else ""
        lines.append(f"    {name} ({kind}{optional}){description}")
    return "\n".join(lines)


def describe_spec_json(spec: ToolSpec) -> str:
    properties = {k: v for k, v in spec.parameters.get("properties", {}).items() if k != HEARTBEAT_PARAM}
    required = [name for name in spec.parameters.get("required", []) if name != HEARTBEAT_PARAM]
    parameters = {"type": "object", "properties": properties, "required": required}
    return json.dumps(
        {"name": spec.name, "description": spec.description, "parameters": parameters}, ensure_ascii=False
    )


def validate_arguments(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """Check the model's arguments against the tool's schema; raise ToolError saying what is wrong."""
    # request_heartbeat is read by the loop itself, not passed to the function.
    properties = {k: v for k, v in tool.spec.parameters.get("properties", {}).items() if k != HEARTBEAT_PARAM}
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        raise ToolError(f"{tool.name} got unexpected argument(s): {', '.join(unknown)}")
    missing = [
        name for name in tool.spec.parameters.get("required", []) if name not in arguments and name != HEARTBEAT_PARAM
    ]
    if missing:
        raise ToolError(f"{tool.name} is missing required argument(s): {', '.join(missing)}")
    clean: dict[str, Any] = {}
    for name, value in arguments.items():
        clean[name] = _coerce(tool.name, name, properties[name], value)
    return clean


def _coerce(tool: str, name: str, schema: dict[str, Any], value: Any) -> Any:
    kind = schema.get("type")
    if value is None:
        return None
    ok = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
    }.get(kind or "", True)
    if not ok and kind == "integer" and isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value, ok = int(value), True  # small models often quote numbers
    if not ok and kind == "boolean" and isinstance(value, str) and value.lower() in ("true", "false"):
        value, ok = value.lower() == "true", True
    if not ok:
        raise ToolError(f"{tool}: argument {name} must be of type {kind}, got {type(value).__name__}")
    if "enum" in schema and value not in schema["enum"]:
        raise ToolError(f"{tool}: argument {name} must be one of {schema['enum']}")
    return value


def load_user_tools(folder: Path) -> list[Tool]:
    """Load tools from ``folder/*.py``: each module lists its functions in ``TOOLS``.

    Each call asks the user first, like every tool that may touch their machine or network,
    unless the function declares itself read-only: ``my_function.read_only = True`` (it only
    reads, changes nothing and sends nothing anywhere). ``kind`` and ``writes_store`` may be set
    the same way (see ``make_tool``)."""
    tools: list[Tool] = []
    if not folder.is_dir():
        return tools
    for path in sorted(folder.glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"memdesk_user_tools.{path.stem}", path)
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as error:  # a user's file: report, do not crash the app
            raise ConfigError(f"Could not load user tools from {path}: {error}") from error
        for function in getattr(module, "TOOLS", []):
            kind = getattr(function, "kind", "other")
            if kind not in get_args(ToolKind):
                raise ConfigError(
                    f"Tool {function.__name__} in {path}: kind must be one of {', '.join(get_args(ToolKind))}"
                )
            tools.append(
                make_tool(
                    function,
                    requires_consent=getattr(function, "read_only", False) is not True,
                    kind=typing.cast(ToolKind, kind),  # checked above
                    # A user tool runs inside the step's transaction unless it says it writes
                    # nothing to the store (then it may be slow without blocking anybody).
                    writes_store=getattr(function, "writes_store", True),
                )
            )
    return tools
