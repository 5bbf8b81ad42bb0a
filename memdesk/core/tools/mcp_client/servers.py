"""The MCP servers an agent may use the tools of: a command MemDesk starts (stdio) or a URL (HTTP).

A server is added disabled (by the user, or from a Letta agent file's ``mcp_servers``); enabling
it connects once, and keeps the tools it offers then (names, descriptions, JSON schemas) with it,
so an agent opens without starting anything. No secret is kept here: a command's environment and
an HTTP server's headers are not stored.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.base.errors import ConfigError
from memdesk.core.storage import Database

STDIO, HTTP = "stdio", "http"
#: Server names become part of tool names (``server__tool``): letters, digits, - and _.
NAME_CHARS = 32


@dataclass(frozen=True)
class McpServer:
    id: int
    agent_id: int
    name: str
    transport: str
    command: tuple[str, ...]
    url: str
    enabled: bool
    origin: str
    tools: tuple[dict[str, Any], ...] = field(default=())
    created_at: datetime | None = None

    def where(self) -> str:
        return shlex.join(self.command) if self.transport == STDIO else self.url


def valid_name(name: str) -> str:
    clean = "".join(c if c.isalnum() or c in "-_" else "_" for c in name.strip())[:NAME_CHARS].strip("_")
    if not clean:
        raise ConfigError(f"An MCP server needs a name of letters or digits, got {name!r}")
    return clean


_COLUMNS = "id, agent_id, name, transport, command, url, enabled, origin, tools, created_at"


def _server(row) -> McpServer:
    return McpServer(
        row[0],
        row[1],
        row[2],
        row[3],
        tuple(json.loads(row[4])),
        row[5],
        bool(row[6]),
        row[7],
        tuple(json.loads(row[8])),
        parse_iso(row[9]),
    )


class McpServers:
    """Owns ``mcp_servers``."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def all(self, agent_id: int) -> list[McpServer]:
        rows = self._db.query(f"SELECT {_COLUMNS} FROM mcp_servers WHERE agent_id = ? ORDER BY name", (agent_id,))
        return [_server(r) for r in rows]

    def enabled(self, agent_id: int) -> list[McpServer]:
        return [s for s in self.all(agent_id) if s.enabled]

    def get(self, agent_id: int, name: str) -> McpServer:
        row = self._db.query_one(
            f"SELECT {_COLUMNS} FROM mcp_servers WHERE agent_id = ? AND name = ?", (agent_id, name)
        )
        if row is None:
            known = ", ".join(s.name for s in self.all(agent_id)) or "none"
            raise ConfigError(f"No MCP server named {name!r} (servers: {known})")
        return _server(row)

    def add(
        self,
        agent_id: int,
        name: str,
        *,
        command: list[str] | None = None,
        url: str = "",
        origin: str = "user",
    ) -> McpServer:
        """A new server, disabled: a command to start (stdio) or a URL (HTTP), not both."""
        name = valid_name(name)
        if bool(command) == bool(url):
            raise ConfigError("An MCP server is a command to start or a URL, one of the two")
        if url and not url.startswith(("http://", "https://")):
            raise ConfigError(f"An MCP server's URL starts with http:// or https://, got {url!r}")
        transport = STDIO if command else HTTP
        existing = self._db.scalar("SELECT 1 FROM mcp_servers WHERE agent_id = ? AND name = ?", (agent_id, name))
        if existing:
            raise ConfigError(f"This agent has an MCP server named {name} already")
        self._db.execute(
            "INSERT INTO mcp_servers(agent_id, name, transport, command, url, origin, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (agent_id, name, transport, json.dumps(list(command or [])), url, origin, iso(self._clock.now())),
        )
        return self.get(agent_id, name)

    def enable(self, agent_id: int, name: str, tools: list[dict[str, Any]]) -> McpServer:
        """Enabled with the tools it offered when the user enabled it."""
        self._db.execute(
            "UPDATE mcp_servers SET enabled = 1, tools = ? WHERE agent_id = ? AND name = ?",
            (json.dumps(tools, ensure_ascii=False), agent_id, name),
        )
        return self.get(agent_id, name)

    def disable(self, agent_id: int, name: str) -> None:
        self.get(agent_id, name)
        self._db.execute("UPDATE mcp_servers SET enabled = 0 WHERE agent_id = ? AND name = ?", (agent_id, name))

    def remove(self, agent_id: int, name: str) -> None:
        self.get(agent_id, name)
        self._db.execute("DELETE FROM mcp_servers WHERE agent_id = ? AND name = ?", (agent_id, name))


def from_letta(server: dict[str, Any]) -> tuple[str, list[str] | None, str] | None:
    """A Letta agent file's MCP server as (name, command, url), without its secrets (its token,
    headers and environment stay behind); None when it names neither a command nor a URL."""
    name = str(server.get("server_name") or "").strip()
    found = server.get("stdio_config")
    stdio: dict[str, Any] = found if isinstance(found, dict) else {}
    command = stdio.get("command")
    if isinstance(command, str) and command.strip():
        args = [str(a) for a in stdio.get("args") or [] if isinstance(a, (str, int, float))]
        return name or "server", [command, *args], ""
    url = server.get("server_url")
    if isinstance(url, str) and url.startswith(("http://", "https://")):
        return name or "server", None, url
    return None


def to_letta(server: McpServer, ref: str) -> dict[str, Any]:
    """A server as a Letta agent file's MCP server (``from_letta`` reads it back)."""
    if server.transport == STDIO:
        command, *args = server.command
        return {
            "id": ref,
            "server_name": server.name,
            "server_type": "stdio",
            "stdio_config": {"server_name": server.name, "type": "stdio", "command": command, "args": list(args)},
        }
    return {"id": ref, "server_name": server.name, "server_type": "streamable_http", "server_url": server.url}
