"""``memdesk mcp``: the MCP server on standard input and output, one process per client app
(Claude Desktop, Cursor, VS Code... start it from their configuration).

The app is the one ``--app`` names (the configuration MemDesk writes passes it), else the name
the client declares when it connects. It takes no instance lock: like ``memdesk memory`` it shares
the store with a running window (WAL).
"""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pydantic
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import CLIENT_INFO_META_KEY, INVALID_REQUEST, PARSE_ERROR
from mcp_types.jsonrpc import ErrorData, JSONRPCError, jsonrpc_message_adapter

from memdesk.core.base.paths import Paths
from memdesk.core.connections.apps import App
from memdesk.core.connections.gate import Connections
from memdesk.mcp.server import MemoryServer
from memdesk.mcp.store import StoreThreads

log = logging.getLogger("memdesk.mcp")


def declared_name(ctx: ServerRequestContext[Any, Any]) -> str:
    """The name the client gave itself: in the handshake (2025-11-25), or in each request's
    metadata (2026-07-28)."""
    params = ctx.session.client_params
    if params is not None and params.client_info.name:
        return params.client_info.name
    meta = dict(ctx.meta) if ctx.meta is not None else {}
    info = meta.get(CLIENT_INFO_META_KEY) or {}
    return str(info.get("name") or "") if isinstance(info, dict) else ""


def stdio_identity(app_name: str | None):
    """How a stdio server knows its app: ``app_name``, else the client's declared name."""

    def identify(ctx: ServerRequestContext[Any, Any], connections: Connections) -> App:
        name = app_name or declared_name(ctx) or "unnamed app"
        return connections.apps.find(name) or connections.apps.register(name)

    return identify


def refusal(line: str) -> JSONRPCError | None:
    """The error a line that is not a JSON-RPC message gets (None: it is one). The SDK drops such a
    line in silence, and a client waiting on the id it sent would wait forever."""
    if not line.strip():
        return None
    try:
        jsonrpc_message_adapter.validate_json(line)
        return None
    except pydantic.ValidationError:
        pass
    try:
        parsed = json.loads(line)
    except ValueError:
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error: not JSON"))
    found = parsed.get("id") if isinstance(parsed, dict) else None
    request_id = found if isinstance(found, (str, int)) and not isinstance(found, bool) else None
    what = "a batch (not supported)" if isinstance(parsed, list) else "not a valid JSON-RPC 2.0 message"
    return JSONRPCError(
        jsonrpc="2.0", id=request_id, error=ErrorData(code=INVALID_REQUEST, message=f"Invalid request: {what}")
    )


class _Answering:
    """Standard input's lines for the SDK, less the ones it would drop: those are answered with
    their error through the server's own output stream (once it exists)."""

    def __init__(self) -> None:
        self.output: Any = None
        self.ready = anyio.Event()
        raw = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace", newline="\n")
        self._lines = anyio.wrap_file(raw)

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._lines:
            error = refusal(line)
            if error is None:
                yield line
                continue
            await self.ready.wait()
            await self.output.send(SessionMessage(message=error))


def serve_stdio(paths: Paths, *, app_name: str | None = None) -> None:
    threads = StoreThreads(paths)
    memory = MemoryServer(threads, stdio_identity(app_name))

    async def main() -> None:
        lines = _Answering()
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.output = write_stream
            lines.ready.set()
            await memory.server.run(read_stream, write_stream, memory.server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        threads.close()
