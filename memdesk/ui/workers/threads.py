"""The window's three background threads, each with its worker: the agent (the model, turns), ingestion
(documents) and the knowledge graph's extraction. Started with the window and ended with it: each
worker is asked to stop, then each thread is waited for."""

from __future__ import annotations

import logging
import threading
import time

from PySide6.QtCore import QObject, QThread

log = logging.getLogger(__name__)


class OutlivedThreads:
    """Worker threads that did not end within a closed window's wait, kept with their workers:
    destroying a running QThread aborts the process, so they finish on their own (each was asked
    to stop, and does at its next check). One per run of the app, shared by the windows it opens:
    a store conversion waits for them to let go of the store first."""

    def __init__(self) -> None:
        self._kept: list[tuple[QThread, QObject]] = []
        self._kept_threads: list[threading.Thread] = []  # the session's (plain Python threads)

    def keep(self, thread: QThread, worker: QObject) -> None:
        thread.setParent(None)
        self._kept.append((thread, worker))

    def keep_thread(self, thread: threading.Thread) -> None:
        self._kept_threads.append(thread)

    def holds(self, thread: QThread | threading.Thread) -> bool:
        return any(kept is thread for kept, _worker in self._kept) or any(kept is thread for kept in self._kept_threads)

    def running(self, wait_s: float = 0.0) -> bool:
        """Whether a closed window's thread still runs (and may hold the store open), after waiting
        up to ``wait_s`` for them to end: a turn or a search cut short usually ends within seconds
        of its window, later on a busy machine."""
        deadline = time.monotonic() + wait_s
        for thread, _worker in self._kept:
            left_ms = int(max(0.0, deadline - time.monotonic()) * 1000)
            if thread.isRunning() and left_ms:
                thread.wait(left_ms)
        for kept in self._kept_threads:
            kept.join(max(0.0, deadline - time.monotonic()))
        return any(thread.isRunning() for thread, _worker in self._kept) or any(
            t.is_alive() for t in self._kept_threads
        )


class WorkerThreads:
    """Each worker moved to its own named thread; ``start`` once, ``wait`` when closing."""

    def __init__(self, parent: QObject, outlived: OutlivedThreads, **workers: QObject) -> None:
        self._outlived = outlived
        self.pairs: dict[str, tuple[QThread, QObject]] = {}
        for name, worker in workers.items():
            thread = QThread(parent)
            thread.setObjectName(name)
            worker.moveToThread(thread)
            self.pairs[name] = (thread, worker)

    def thread(self, name: str) -> QThread:
        return self.pairs[name][0]

    def start(self) -> None:
        for thread, _worker in self.pairs.values():
            thread.start()

    def any_running(self) -> bool:
        return any(thread.isRunning() for thread, _worker in self.pairs.values())

    def wait(self, wait_ms: int) -> None:
        """Wait up to ``wait_ms`` for each thread (its worker was asked to stop). One still inside
        something it cannot leave (a library import on a saturated machine) is left to finish."""
        for thread, worker in self.pairs.values():
            if not thread.wait(wait_ms):
                log.warning("%s still busy %d ms after close; left to finish on its own", thread.objectName(), wait_ms)
                self._outlived.keep(thread, worker)
