"""What the running app serves to other apps while it runs, from its settings: the encrypted
store's passphrase on the private handover socket (app/handover.py), and loopback HTTP when the
user turned ``mcp_http`` on. Nothing listens otherwise. The window (and any front end holding the
store) starts one ``Serving`` and tells it when the settings change."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from memdesk.app.handover import HandoverServer
from memdesk.core.base.errors import MemDeskError
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.embedding import Embedder

if TYPE_CHECKING:
    from memdesk.mcp.http import LoopbackServer
    from memdesk.mcp.store import StoreThreads

log = logging.getLogger("memdesk.mcp")


class Serving:
    def __init__(self, paths: Paths, key: str | None, embedder: Embedder | None = None) -> None:
        self._paths = paths
        self._key = key
        self._embedder = embedder
        self._handover = HandoverServer(paths, key) if key is not None else None
        # uvicorn and the SDK load when HTTP is first turned on, not with the window
        self._http: LoopbackServer | None = None
        self._threads: StoreThreads | None = None

    @property
    def url(self) -> str | None:
        """The loopback URL served now (None: HTTP is off)."""
        return self._http.url if self._http is not None else None

    def follow(self, settings: Settings) -> None:
        """Serve HTTP as ``settings`` say: start, stop, or move to another port."""
        wanted = settings.mcp_http_port if settings.mcp_http else None
        current = self._http.port if self._http is not None else None
        if wanted == current:
            return
        self._stop_http()
        if wanted is None:
            return
        from memdesk.mcp.http import LoopbackServer
        from memdesk.mcp.store import StoreThreads

        threads = StoreThreads(self._paths, embedder=self._embedder, key=self._key)
        server = LoopbackServer(threads, wanted)
        try:
            server.start()
        except (OSError, SystemExit) as error:  # the port is taken: uvicorn exits its thread
            threads.close()
            raise MemDeskError(
                f"Could not serve MCP on 127.0.0.1:{wanted}: {error}", hint="choose another mcp_http_port"
            ) from None
        if not server.serving:
            threads.close()
            raise MemDeskError(
                f"Could not serve MCP on 127.0.0.1:{wanted} (is the port taken?)", hint="choose another mcp_http_port"
            )
        self._http, self._threads = server, threads
        log.info("serving MCP on %s", server.url)

    def _stop_http(self) -> None:
        if self._http is not None:
            self._http.stop()
        if self._threads is not None:
            self._threads.close()
        self._http = self._threads = None

    def close(self) -> None:
        self._stop_http()
        if self._handover is not None:
            self._handover.close()
            self._handover = None
