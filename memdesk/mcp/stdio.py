"""``memdesk mcp``: the MCP server on standard input and output, one process per client app
(Claude Desktop, Cursor, VS Code... start it from their configuration).

The app is the one ``--app`` names (the configuration MemDesk writes passes it), else the name
the client declares when it connects. It takes no instance lock: like ``memdesk memory`` it shares
the store with a running window (WAL).
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp_types import CLIENT_INFO_META_KEY

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


def serve_stdio(paths: Paths, *, app_name: str | None = None) -> None:
    threads = StoreThreads(paths)
    memory = MemoryServer(threads, stdio_identity(app_name))

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await memory.server.run(read_stream, write_stream, memory.server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        threads.close()
