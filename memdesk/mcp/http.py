"""Loopback Streamable HTTP: MCP for apps that do not start servers themselves (Open WebUI),
served by the running app when the user turns it on (the mcp_http setting), and by
``memdesk mcp --http``.

Only on 127.0.0.1, never another interface. Every request must carry one app's bearer token
(``memdesk mcp token APP``); its ``Host`` must name this loopback port and an ``Origin``, when a
browser sends one, this server itself: a web page the user visits cannot reach memory by making
its own name resolve to 127.0.0.1 (DNS rebinding), nor by having the browser post to the port.
These checks run before the SDK sees the request; the SDK's own DNS-rebinding check, configured
the same way, runs after them.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from memdesk.core.base.errors import ConnectionRefused
from memdesk.core.connections.apps import App
from memdesk.core.connections.gate import Connections
from memdesk.mcp.server import MemoryServer
from memdesk.mcp.store import StoreThreads

log = logging.getLogger("memdesk.mcp")

LOOPBACK = "127.0.0.1"
PATH = "/mcp"
#: The largest request body accepted (the longest argument a tool takes is 20,000 characters).
MAX_BODY = 1 << 20


def bearer(headers: dict[str, str]) -> str:
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def allowed_hosts(port: int) -> list[str]:
    return [f"{LOOPBACK}:{port}", f"localhost:{port}"]


def allowed_origins(port: int) -> list[str]:
    return [f"http://{host}" for host in allowed_hosts(port)]


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def http_identity(ctx: ServerRequestContext[Any, Any], connections: Connections) -> App:
    """The app whose token the request carries (checked again here: a revoke ends it at once)."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    app = connections.apps.by_token(bearer(dict(headers or {})))
    if app is None or app.revoked:
        raise ConnectionRefused("This app's token is not valid", hint="connect it again in MemDesk")
    return app


class Guard:
    """The checks every request passes before MCP: loopback Host, no foreign Origin, a valid token."""

    def __init__(self, inner: Any, threads: StoreThreads, port: int) -> None:
        self._inner = inner
        self._threads = threads
        self._hosts = set(allowed_hosts(port))
        self._origins = set(allowed_origins(port))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._inner(scope, receive, send)
            return
        headers = _headers(scope)
        if headers.get("host", "") not in self._hosts:
            await _refuse(send, 421, "This server answers only on 127.0.0.1 under its own name")
            return
        origin = headers.get("origin")
        if origin is not None and origin not in self._origins:
            await _refuse(send, 403, "Requests from web pages are refused")
            return
        token = bearer(headers)
        app = await self._threads.run(lambda: self._threads.connections().apps.by_token(token)) if token else None
        if app is None or app.revoked:
            await _refuse(
                send,
                401,
                "A valid token is required: connect this app in MemDesk (memdesk mcp token APP)",
                extra=[(b"www-authenticate", b'Bearer realm="MemDesk"')],
            )
            return
        await self._inner(scope, receive, send)


async def _refuse(send: Send, status: int, message: str, *, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"error": message}).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(extra or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def build_app(threads: StoreThreads, port: int) -> Any:
    memory = MemoryServer(threads, http_identity)
    inner = memory.server.streamable_http_app(
        streamable_http_path=PATH,
        host=LOOPBACK,
        max_request_body_size=MAX_BODY,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=allowed_hosts(port),
            allowed_origins=allowed_origins(port),
        ),
    )
    return Guard(inner, threads, port)


class LoopbackServer:
    """uvicorn on 127.0.0.1:``port`` serving ``build_app``, in this process's main thread (the
    running app starts one as a child process: memdesk/mcp/serving.py)."""

    def __init__(self, threads: StoreThreads, port: int) -> None:
        self.port = port
        config = uvicorn.Config(
            build_app(threads, port),
            host=LOOPBACK,
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="on",
            server_header=False,
        )
        self._server = uvicorn.Server(config)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}{PATH}"

    def run(self) -> None:
        self._server.run()

    def stop(self) -> None:
        """From any thread: finish the requests in hand and return from ``run``."""
        self._server.should_exit = True

    def stop_when_closed(self, stream: Any) -> None:
        """Stop once ``stream`` (this process's standard input, a pipe the app that started it
        holds) reaches its end: the app has closed it or has ended, even killed, and a server it
        started must not outlive it holding the port and the store."""

        def watch() -> None:
            try:
                while stream.read(4096):
                    pass
            except (OSError, ValueError):
                pass
            log.info("the app that started this server has ended: stopping")
            self.stop()

        threading.Thread(target=watch, name="mcp-parent-watch", daemon=True).start()
