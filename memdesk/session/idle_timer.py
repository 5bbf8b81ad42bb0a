"""Work a terminal user did not ask for, run after some minutes without activity.

``IdleTimer`` is the timer both idle tasks share (consolidation/idle.py, forget/retention_idle.py):
``touch`` counts idle time from now, ``interrupt`` stops the count, ``close`` ends it for good.
A task that meets the store held by another writer past its busy timeout (the graph extractor
catching up, an ingestion) has failed at nothing the user can act on: it asks to run again at the
next idle moment instead of reporting an error. The window does the same with QTimers
(memdesk/ui/dialogs/consolidation.py, ui/dialogs/forget.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("memdesk.idle")


class IdleTimer:
    def __init__(self, name: str, idle_seconds: float, task: Callable[[], bool]) -> None:
        """``task`` runs on the timer's thread; it returns True to run again at the next idle moment."""
        self._name = name
        self._idle_seconds = idle_seconds
        self._task = task
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def running(self) -> bool:
        timer = self._timer
        return timer is not None and timer.is_alive()

    def touch(self) -> None:
        """The user just did something: start counting idle time again."""
        with self._lock:
            self._arm()

    def interrupt(self, *, wait: bool) -> None:
        """No task starts now; ``wait``: also until a task under way has returned."""
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            if wait and timer is not threading.current_thread():
                timer.join()

    def close(self, *, wait: bool = True) -> None:
        with self._lock:
            self._closed = True
        self.interrupt(wait=wait)

    def _arm(self) -> None:
        if self._closed or self._idle_seconds <= 0:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = threading.Timer(self._idle_seconds, self._fire)
        self._timer.daemon = True
        self._timer.name = self._name
        self._timer.start()

    def _fire(self) -> None:
        if self._closed:
            return
        me = threading.current_thread()
        if self._task():
            with self._lock:
                if self._timer is me:  # nobody touched or interrupted it meanwhile
                    log.info("%s met a busy store; it runs again at the next idle moment", self._name)
                    self._arm()
