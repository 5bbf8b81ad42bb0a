"""Tools an imported agent file brought along (a Letta tool's Python ``source_code``).

They are stored disabled: their code is shown to the user and never compiled or run until the
user enables the tool, and even then every call asks for consent like other tools that touch the
machine. Enabling checks the code without running it (the function must exist and take only the
arguments its JSON schema declares: Letta tools that need Letta's ``agent_state`` cannot run here).
"""

from __future__ import annotations

import ast
import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from desktop.core.clock import Clock, iso, parse_iso
from desktop.core.runtime.base import ToolSpec
from desktop.core.storage import Database
from desktop.core.tools.context import ToolContext
from desktop.core.tools.registry import HEARTBEAT_DESCRIPTION, HEARTBEAT_PARAM, Tool
from desktop.errors import ConfigError, ToolError

log = logging.getLogger("memdesk.tools")

#: Parameters Letta passes to tools itself; MemDesk has nothing to pass.
LETTA_INJECTED = ("agent_state", "self")


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
        parameters = self.json_schema.get("parameters") or {"type": "object", "properties": {}}
        return parameters if isinstance(parameters, dict) else {"type": "object", "properties": {}}


_COLUMNS = "id, agent_id, name, description, source_code, json_schema, origin, original, enabled, created_at"


def _tool(row) -> ImportedTool:
    return ImportedTool(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]), row[6], json.loads(row[7]), bool(row[8]), parse_iso(row[9]))


def runnable_problem(tool: ImportedTool, reserved: set[str] = frozenset()) -> str | None:
    """Why this tool cannot run in MemDesk, found by reading its code (never running it)."""
    if tool.name in reserved:
        return f"{tool.name} has the name of a built-in MemDesk function"
    if not tool.source_code.strip():
        return f"{tool.name} has no Python code (it ran inside Letta)"
    try:
        tree = ast.parse(tool.source_code)
    except SyntaxError as error:
        return f"{tool.name}'s code does not parse: {error.msg} (line {error.lineno})"
    function = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == tool.name), None)
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

    def add(self, agent_id: int, *, name: str, description: str, source_code: str, json_schema: dict, origin: str, original: dict) -> int:
        cursor = self._db.execute(
            "INSERT INTO imported_tools(agent_id, name, description, source_code, json_schema, origin, original, enabled, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)",
            (agent_id, name, description, source_code, json.dumps(json_schema), origin, json.dumps(original), iso(self._clock.now())),
        )
        return int(cursor.lastrowid)

    def list(self, agent_id: int) -> list[ImportedTool]:
        return [_tool(r) for r in self._db.query(f"SELECT {_COLUMNS} FROM imported_tools WHERE agent_id = ? ORDER BY name", (agent_id,))]

    def get(self, agent_id: int, name: str) -> ImportedTool | None:
        row = self._db.query_one(f"SELECT {_COLUMNS} FROM imported_tools WHERE agent_id = ? AND name = ?", (agent_id, name))
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

    def enabled_tools(self, agent_id: int) -> list[Tool]:
        """The enabled tools, compiled for the registry (this is where their code first runs).
        One that fails to load is left out (and logged) rather than keeping the agent from opening."""
        tools = []
        for record in self.list(agent_id):
            if not record.enabled:
                continue
            try:
                tools.append(build_tool(record))
            except ConfigError as error:
                log.warning("%s", error.message)
        return tools


def reserved_names() -> set[str]:
    from desktop.core.tools.builtin import ALIASES, BUILTIN_FUNCTIONS

    return {f.__name__ for f in BUILTIN_FUNCTIONS} | set(ALIASES)


def build_tool(tool: ImportedTool) -> Tool:
    namespace: dict[str, Any] = {"__name__": f"memdesk_imported_{tool.name}"}
    try:
        exec(compile(tool.source_code, f"<imported tool {tool.name}>", "exec"), namespace)  # noqa: S102 - the user enabled it
    except Exception as error:
        raise ConfigError(f"The imported tool {tool.name} failed to load: {type(error).__name__}: {error}") from error
    function = namespace.get(tool.name)
    if not callable(function):
        raise ConfigError(f"The imported tool {tool.name} defines no function {tool.name}")
    parameters = tool.parameters
    properties = {k: v for k, v in parameters.get("properties", {}).items() if k != HEARTBEAT_PARAM}
    required = [r for r in parameters.get("required", []) if r in properties]
    properties[HEARTBEAT_PARAM] = {"type": "boolean", "description": HEARTBEAT_DESCRIPTION}
    spec = ToolSpec(
        tool.name, tool.description or f"The imported tool {tool.name}",
        {"type": "object", "properties": properties, "required": [*required, HEARTBEAT_PARAM]},
    )

    def run(ctx: ToolContext, **arguments: Any) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
        if not ctx.consent.allow(ctx.agent_id, tool.name, f"run the imported tool {tool.name}({shown[:200]})"):
            raise ToolError(f"The user did not allow {tool.name} to run")
        try:
            result = function(**arguments)
        except Exception as error:  # foreign code: its failure goes back to the model
            raise ToolError(f"{tool.name} raised {type(error).__name__}: {error}") from error
        return "None" if result is None else str(result)

    return Tool(tool.name, run, spec, takes_heartbeat=True, requires_consent=True)
