"""Talking to one MCP server for one piece of work (its tool list, or one call), from the agent's
thread, which is not an event loop: the SDK's client runs on a thread of its own with its own loop.

Each piece of work starts a connection and ends it (a stdio server's process is started and
stopped with it), so nothing lingers between calls and a server that went wrong is gone after
its call. Every wait is bounded: the connection and its work together get ``seconds``, the
user's Stop ends it at once (and the turn, as Stop does), a server that crashes or closes is an
error saying so, and what a server sends back is cut to ``chars`` characters. A stdio server gets
the SDK's safe default environment (not MemDesk's) and its error output goes nowhere.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from memdesk.core.base.errors import GenerationCancelled, McpServerError
from memdesk.core.runtime.base import CancelToken
from memdesk.core.tools.mcp_client.servers import STDIO, McpServer

if TYPE_CHECKING:
    from mcp import Client

T = TypeVar("T")
log = logging.getLogger("memdesk.mcp")

#: How often the waiting thread looks at the Stop button.
POLL_S = 0.05
#: Most tools kept of one server (a server offering thousands would flood the prompt).
MAX_TOOLS = 64
#: Beyond the work's own ``seconds``: what ending the connection may take (the SDK gives a stdio
#: server 2 s after its input closes, then signals its process group) before the caller is told
#: and the thread left behind, so that no wait of the agent's is unbounded.
CLOSE_S = 15.0


class _Stopped(Exception):
    pass


def _target(server: McpServer, errlog) -> Any:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    if server.transport == STDIO:
        command, *args = server.command
        return stdio_client(StdioServerParameters(command=command, args=list(args)), errlog=errlog)
    return server.url


def run_with_server(
    server: McpServer,
    work: Callable[[Client], Awaitable[T]],
    *,
    seconds: float,
    cancel: CancelToken | None = None,
) -> T:
    """``work(client)`` on a fresh connection to ``server``, within ``seconds``; McpServerError
    saying what went wrong otherwise (Stop included)."""
    # The SDK loads when a server is first used: opening an agent, or any terminal command, does not pay for it.
    from mcp import Client

    outcome: dict[str, Any] = {}
    loop_ready = threading.Event()
    state: dict[str, Any] = {}

    async def main() -> T:
        with open(os.devnull, "w") as errlog:
            async with Client(_target(server, errlog), read_timeout_seconds=seconds) as client:
                return await work(client)

    def thread_main() -> None:
        async def bounded() -> None:
            state["task"] = asyncio.current_task()
            state["loop"] = asyncio.get_running_loop()
            loop_ready.set()
            try:
                outcome["value"] = await asyncio.wait_for(main(), timeout=seconds)
            except asyncio.CancelledError:
                outcome["error"] = _Stopped()
            except BaseException as error:  # reported to the waiting thread
                outcome["error"] = error

        asyncio.run(bounded())

    thread = threading.Thread(target=thread_main, name=f"mcp-client-{server.name}", daemon=True)
    thread.start()
    loop_ready.wait(timeout=10)
    stopped = False
    give_up = time.monotonic() + seconds + CLOSE_S
    while thread.is_alive():
        thread.join(POLL_S)
        if cancel is not None and cancel.cancelled and not stopped and "loop" in state:
            stopped = True
            give_up = min(give_up, time.monotonic() + CLOSE_S)
            state["loop"].call_soon_threadsafe(state["task"].cancel)
        if time.monotonic() > give_up:
            log.warning("the connection to the MCP server %s did not end; left to its thread", server.name)
            if stopped:
                break
            raise McpServerError(
                f"The MCP server {server.name} did not answer within {seconds:g} s, nor let go of the connection"
            )
    error = outcome.get("error")
    if error is None and "value" in outcome:
        return outcome["value"]
    if stopped:
        # as a stopped imported tool: the turn ends, it is not a failed call the model reads
        raise GenerationCancelled(f"Stopped the call to the MCP server {server.name} when the turn was stopped")
    raise _explain(server, error, seconds)


def _explain(server: McpServer, error: BaseException | None, seconds: float) -> McpServerError:
    from mcp.shared.exceptions import MCPError
    from mcp_types.jsonrpc import CONNECTION_CLOSED

    name = f"The MCP server {server.name}"
    if isinstance(error, (TimeoutError, asyncio.TimeoutError)):
        return McpServerError(
            f"{name} did not answer within {seconds:g} s; the call was ended",
            hint="the mcp_call_timeout_s setting gives slow servers more time",
        )
    if isinstance(error, MCPError) and error.code == CONNECTION_CLOSED:
        return McpServerError(f"{name} stopped or closed the connection")
    if isinstance(error, MCPError):
        return McpServerError(f"{name} refused the request: {error.message[:300]}")
    if isinstance(error, FileNotFoundError | PermissionError):
        return McpServerError(f"{name} could not be started: {server.where()} ({type(error).__name__})")
    if isinstance(error, BaseExceptionGroup):
        first = error.exceptions[0] if error.exceptions else None
        return _explain(server, first, seconds)
    what = type(error).__name__ if error is not None else "no answer"
    return McpServerError(f"{name} stopped or closed the connection ({what})")


def fetch_tools(server: McpServer, *, seconds: float) -> list[dict[str, Any]]:
    """The tools ``server`` offers, as plain JSON (name, description, inputSchema, annotations)."""

    async def work(client: Client) -> list[dict[str, Any]]:
        found = (await client.list_tools()).tools
        return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in found[:MAX_TOOLS]]

    return run_with_server(server, work, seconds=seconds)


def call_tool(
    server: McpServer,
    tool: str,
    arguments: dict[str, Any],
    *,
    seconds: float,
    chars: int,
    cancel: CancelToken | None = None,
) -> tuple[str, bool]:
    """One call: the result's text (cut to ``chars``) and whether the server called it an error."""

    async def work(client: Client) -> tuple[str, bool]:
        result = await client.call_tool(tool, arguments)
        parts: list[str] = []
        for block in result.content:
            text = getattr(block, "text", None)
            parts.append(text if isinstance(text, str) else f"[{getattr(block, 'type', 'content')} not shown]")
        if not parts and result.structured_content is not None:
            parts.append(json.dumps(result.structured_content, ensure_ascii=False))
        return "\n".join(parts), bool(result.is_error)

    text, failed = run_with_server(server, work, seconds=seconds, cancel=cancel)
    if len(text) > chars:
        text = text[:chars] + f"\n[… {len(text) - chars} more characters were cut]"
    return text, failed
