"""Tools an imported agent file brought along (a Letta tool's Python ``source_code``).

They are stored disabled: their code is shown to the user and never compiled or run until the
user enables the tool. Enabling reads the code without running it: outside functions it may hold
only imports, function definitions, constants and a docstring (so loading it does nothing), and
the function must take only the arguments its JSON schema declares (Letta tools that need
Letta's ``agent_state`` cannot run here). Opening an agent builds its enabled tools from the
stored JSON schema, checking the code again (it could have changed) and still not running it.
The code runs only when the model calls the tool and the user allowed that one call (the loop's
consent question): in a child process (``tool_process``), outside the step's transaction.
"""

from __future__ import annotations

import ast
import builtins
import json
import logging
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.base.errors import ConfigError, ToolError
from memdesk.core.runtime.base import ToolSpec
from memdesk.core.storage import Database
from memdesk.core.text.visible import hidden_characters
from memdesk.core.tools.consent_text import with_arguments
from memdesk.core.tools.context import ToolContext
from memdesk.core.tools.registry import HEARTBEAT_DESCRIPTION, HEARTBEAT_PARAM, Tool
from memdesk.core.tools.tool_process import ProcessLimits, run_tool_process

log = logging.getLogger("memdesk.tools")

#: Parameters Letta passes to tools itself; MemDesk has nothing to pass.
LETTA_INJECTED = ("agent_state", "self")
#: Longest code read: a Letta tool is a function of a few hundred lines, and Python's parser needs
#: memory many times the text's size (a 200,000-character expression exhausted it).
MAX_SOURCE_CHARS = 100_000


@dataclass(frozen=True)
class ImportedTool:
    id: int
    agent_id: int
    name: str
    description: str
    source_code: str
    json_schema: dict[str, Any]
    origin: str
    original: dict[str, Any]
    enabled: bool
    created_at: datetime

    @property
    def parameters(self) -> dict[str, Any]:
        """The schema's parameters, as an object schema whatever the file held."""
        parameters = self.json_schema.get("parameters")
        parameters = parameters if isinstance(parameters, dict) else {}
        properties = parameters.get("properties")
        required = parameters.get("required")
        return {
            **parameters,
            "type": "object",
            "properties": properties if isinstance(properties, dict) else {},
            "required": [r for r in required if isinstance(r, str)] if isinstance(required, list) else [],
        }


_COLUMNS = "id, agent_id, name, description, source_code, json_schema, origin, original, enabled, created_at"


def _tool(row) -> ImportedTool:
    return ImportedTool(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        json.loads(row[5]),
        row[6],
        json.loads(row[7]),
        bool(row[8]),
        parse_iso(row[9]),
    )


def top_level_problem(source: str, tree: ast.Module) -> str | None:
    """What outside any function would run as soon as the code is loaded (None: nothing does).
    Allowed there: imports, function definitions (no decorators, constant default values),
    assignments of constants and a docstring."""
    for index, node in enumerate(tree.body):
        if (
            index == 0
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.decorator_list:
                decorator = node.decorator_list[0]
                return (
                    f"decorates {node.name} on line {decorator.lineno} (@{_excerpt(source, decorator)}):"
                    " a decorator runs code when the file loads"
                )
            defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
            for default in defaults:
                if not _is_constant(default):
                    return (
                        f"gives {node.name} a default value that is not a constant on line {default.lineno}"
                        f" ({_excerpt(source, default)})"
                    )
            continue
        if isinstance(node, ast.Assign) and all(_names_only(t) for t in node.targets) and _is_constant(node.value):
            continue
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.value is not None
            and _is_constant(node.value)
        ):
            continue
        return (
            f"runs something when it loads, on line {node.lineno} ({_excerpt(source, node)}): outside functions only "
            "imports, function definitions, constants and a docstring are allowed"
        )
    return None


def _is_constant(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _names_only(target: ast.AST) -> bool:
    if isinstance(target, ast.Name):
        return True
    return isinstance(target, (ast.Tuple, ast.List)) and all(_names_only(t) for t in target.elts)


def _excerpt(source: str, node: ast.AST) -> str:
    text = (ast.get_source_segment(source, node) or "").strip().splitlines()
    first = text[0] if text else type(node).__name__
    return first if len(first) <= 60 and len(text) <= 1 else first[:57] + "..."


def runnable_problem(tool: ImportedTool, reserved: Collection[str] = frozenset()) -> str | None:
    """Why this tool cannot run in MemDesk, found by reading its code (never running it)."""
    if tool.name in reserved:
        return f"{tool.name} has the name of a built-in MemDesk function"
    if not tool.source_code.strip():
        return f"{tool.name} has no Python code (it ran inside Letta)"
    hidden = hidden_characters(tool.source_code)
    if hidden:
        # Shown, such characters make the code read as something else (terminal escapes erase
        # lines, bidi controls reorder them): code that holds any is never run.
        return (
            f"{tool.name}'s code holds {len(hidden)} hidden character(s) that can make the code shown differ "
            f"from the code that runs, the first {hidden[0].describe()}"
        )
    if len(tool.source_code) > MAX_SOURCE_CHARS:
        return (
            f"{tool.name}'s code has {len(tool.source_code):,} characters, "
            f"more than the {MAX_SOURCE_CHARS:,} MemDesk reads"
        )
    try:
        tree = ast.parse(tool.source_code)
    except SyntaxError as error:
        return f"{tool.name}'s code does not parse: {error.msg} (line {error.lineno})"
    except (MemoryError, RecursionError):
        return f"{tool.name}'s code is nested too deeply to be read"
    problem = top_level_problem(tool.source_code, tree)
    if problem:
        return f"{tool.name}'s code {problem}"
    function = next(
        (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == tool.name), None
    )
    if function is None:
        return f"{tool.name}'s code defines no function named {tool.name}"
    if isinstance(function, ast.AsyncFunctionDef):
        return f"{tool.name} is an async function; MemDesk runs plain functions"
    names = [a.arg for a in function.args.args + function.args.kwonlyargs]
    injected = [n for n in names if n in LETTA_INJECTED]
    if injected:
        return f"{tool.name} needs Letta's {injected[0]}, which MemDesk cannot provide"
    declared = set(tool.parameters.get("properties", {})) - {HEARTBEAT_PARAM}
    undeclared = [n for n in names if n not in declared]
    defaults = len(function.args.defaults)
    required_positional = names[: len(function.args.args) - defaults]
    if any(n in required_positional for n in undeclared):
        return f"{tool.name} takes arguments its schema does not declare: {', '.join(undeclared)}"
    return None


class ImportedTools:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def add(
        self,
        agent_id: int,
        *,
        name: str,
        description: str,
        source_code: str,
        json_schema: dict,
        origin: str,
        original: dict,
    ) -> int:
        cursor = self._db.execute(
            "INSERT INTO imported_tools(agent_id, name, description, source_code, json_schema, origin, original,"
            " enabled, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)",
            (
                agent_id,
                name,
                description,
                source_code,
                json.dumps(json_schema),
                origin,
                json.dumps(original),
                iso(self._clock.now()),
            ),
        )
        return int(cursor.lastrowid)

    def list(self, agent_id: int) -> list[ImportedTool]:
        return [
            _tool(r)
            for r in self._db.query(
                f"SELECT {_COLUMNS} FROM imported_tools WHERE agent_id = ? ORDER BY name", (agent_id,)
            )
        ]

    def get(self, agent_id: int, name: str) -> ImportedTool | None:
        row = self._db.query_one(
            f"SELECT {_COLUMNS} FROM imported_tools WHERE agent_id = ? AND name = ?", (agent_id, name)
        )
        return _tool(row) if row else None

    def set_enabled(self, agent_id: int, name: str, enabled: bool, *, reserved: set[str] | None = None) -> ImportedTool:
        """The user's decision. Enabling refuses code that cannot run here (see ``runnable_problem``)
        and names taken by MemDesk's functions (``reserved``: the built-ins by default)."""
        tool = self.get(agent_id, name)
        if tool is None:
            raise ConfigError(f"This agent has no imported tool named {name!r}")
        if enabled:
            problem = runnable_problem(tool, reserved_names() if reserved is None else set(reserved))
            if problem:
                raise ConfigError(f"Cannot enable {name}: {problem}")
        self._db.execute("UPDATE imported_tools SET enabled = ? WHERE id = ?", (int(enabled), tool.id))
        return self.get(agent_id, name)  # type: ignore[return-value]

    def enabled_tools(self, agent_id: int, limits: ProcessLimits = ProcessLimits()) -> builtins.list[Tool]:
        """The enabled tools for the registry (their code is checked, not run). One whose stored
        code no longer passes the checks is left out (and logged) rather than keeping the agent
        from opening."""
        tools = []
        for record in self.list(agent_id):
            if not record.enabled:
                continue
            try:
                tools.append(build_tool(record, limits))
            except ConfigError as error:
                log.warning("%s", error.message)
        return tools


def reserved_names() -> set[str]:
    from memdesk.core.tools.builtin import ALIASES, BUILTIN_FUNCTIONS

    return {f.__name__ for f in BUILTIN_FUNCTIONS} | set(ALIASES)


def enabling_means(name: str, limits: ProcessLimits = ProcessLimits()) -> str:
    """The Enable confirmation, in the window and the terminal: exactly what enabling allows."""
    return (
        f"Enable {name}? Its code (shown above) then runs only when the agent calls {name} and you allow that call. "
        "Each call runs in a separate Python process that MemDesk gives only the call's arguments (not your "
        "environment variables, not where its data is, and no way to read MemDesk's own memory or open files), in a "
        f"new temporary folder deleted afterwards, stopped after {limits.seconds:g} seconds together with every "
        "process it started. It still runs as you: it can read and change your files, MemDesk's included, and use "
        "the network like any program you start."
    )


def build_tool(tool: ImportedTool, limits: ProcessLimits = ProcessLimits()) -> Tool:
    """The tool the registry offers: its spec comes from the stored JSON schema; its code is
    only read here. Each call (after the loop asked the user) runs it in a child process; it
    writes nothing to the store, so it runs outside the step's transaction."""
    problem = runnable_problem(tool)
    if problem:
        raise ConfigError(f"The imported tool {tool.name} cannot run: {problem}")
    parameters = tool.parameters
    properties = {k: v for k, v in parameters.get("properties", {}).items() if k != HEARTBEAT_PARAM}
    required = [r for r in parameters.get("required", []) if r in properties]
    properties[HEARTBEAT_PARAM] = {"type": "boolean", "description": HEARTBEAT_DESCRIPTION}
    spec = ToolSpec(
        tool.name,
        tool.description or f"The imported tool {tool.name}",
        {"type": "object", "properties": properties, "required": [*required, HEARTBEAT_PARAM]},
    )

    def run(ctx: ToolContext, **arguments: Any) -> str:
        problem = runnable_problem(tool)
        if problem:  # never run code that skipped the checks
            raise ToolError(f"{tool.name} cannot run: {problem}")
        return run_tool_process(tool.source_code, tool.name, arguments, limits=limits, cancel=ctx.cancel)

    def summary(arguments: dict[str, Any]) -> str:
        # What the code gets is what the user sees: every argument in full.
        return with_arguments("run the imported tool {call} in a separate process", tool.name, arguments)

    return Tool(
        tool.name, run, spec, takes_heartbeat=True, requires_consent=True, writes_store=False, consent_summary=summary
    )
