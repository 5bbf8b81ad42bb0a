"""The store as the MCP server reaches it: a connection per worker thread, a route to an encrypted
store's passphrase that never involves a client's configuration, and the threads themselves.

The SDK runs the protocol on an event loop; the store's work runs on a small pool of threads of
our own (``mcp-store-N``), each with its own SQLite connection (WAL: the window and the agent keep
writing meanwhile; a write waits out their short transactions under the busy timeout). One
embedding model is shared by them, loaded on first need.

An encrypted store's passphrase comes from the running window (app/handover.py) or, where the
user chose to keep it there, the system keyring; otherwise every request fails with a clear
"locked" error, at once.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from memdesk.app.handover import key_from_running_app, locked_error
from memdesk.app.keyring import key_from_keyring
from memdesk.app.services import Services, default_embedder, open_services
from memdesk.core.base.paths import Paths
from memdesk.core.connections.gate import Connections
from memdesk.core.embedding import Embedder
from memdesk.core.storage.driver import file_is_encrypted

log = logging.getLogger("memdesk.mcp")

T = TypeVar("T")

#: Worker threads with a connection each: a slow write (an embedding) leaves a search a thread.
WORKERS = 2
#: How long a write waits for the window's or the agent's write transaction before it fails.
BUSY_TIMEOUT_S = 15.0


class StoreThreads:
    def __init__(
        self,
        paths: Paths,
        *,
        embedder: Embedder | None = None,
        key: str | None = None,
        open_with: Callable[..., Services] = open_services,
    ) -> None:
        """``key``: an encrypted store's passphrase when the caller has it (the window serving
        HTTP); else it is asked of the running window or the keyring at the first request."""
        self.paths = paths
        self._embedder = embedder
        self._key = key
        self._open_with = open_with
        self._local = threading.local()
        self._lock = threading.Lock()
        self._opened: list[Services] = []
        self._executor = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="mcp-store")

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = default_embedder()
            return self._embedder

    def _passphrase(self) -> str | None:
        with self._lock:
            if self._key is not None or not file_is_encrypted(self.paths.database):
                return self._key
        key = key_from_running_app(self.paths) or key_from_keyring(self.paths)
        if key is None:
            raise locked_error(self.paths)
        with self._lock:
            self._key = key
        return key

    def services(self) -> Services:
        """This thread's services (opened on its first use)."""
        services = getattr(self._local, "services", None)
        if services is None:
            services = self._open_with(self.paths, key=self._passphrase(), embedder=self.embedder)
            services.db.set_busy_timeout(BUSY_TIMEOUT_S)
            self._local.services = services
            with self._lock:
                self._opened.append(services)
        return services

    def connections(self) -> Connections:
        connections = getattr(self._local, "connections", None)
        if connections is None:
            services = self.services()
            settings_store = services.settings_store
            connections = Connections(
                services.memory, services.clock, keep_days=lambda: settings_store.load().mcp_log_days
            )
            self._local.connections = connections
        return connections

    async def run(self, work: Callable[[], T]) -> T:
        """``work`` on a store thread. A client that goes away meanwhile stops waiting; the work
        itself finishes (its transaction commits or rolls back whole)."""
        return await asyncio.wrap_future(self._executor.submit(work))

    def warm_embedder(self, *, after_s: float = 0.0) -> None:
        """Load the embedding model in the background, so the first search does not wait for it.
        ``after_s``: wait first, so the answer being sent is not slowed by the model's loading
        (tokenizer and weights, a fraction of a second since it runs in NumPy)."""

        def warm() -> None:
            try:
                self.embedder.embed(["warm up"])
            except Exception as error:  # the first search will say what is wrong
                log.warning("the embedding model did not load ahead: %s", type(error).__name__)

        timer = threading.Timer(after_s, warm)
        timer.name, timer.daemon = "mcp-embedder-warm-up", True
        timer.start()

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            opened, self._opened = self._opened, []
        for services in opened:
            services.close()

    def call(self, work: Callable[[], T]) -> T:
        """``work`` on a store thread, waited for here (for callers outside the event loop)."""
        return self._executor.submit(work).result()

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"StoreThreads({self.paths.home})"


def run_on(threads: StoreThreads, work: Callable[[Connections], Any]) -> Callable[[], Any]:
    """``work`` bound to the calling store thread's connections."""
    return lambda: work(threads.connections())
