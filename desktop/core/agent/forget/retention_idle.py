"""Retention while a terminal user is idle: after some minutes without activity, a confirmed and
due policy is applied (retention.py). The window does the same with a QTimer (ui/qt_forget.py).

``IdleTasks`` lets the terminal chat drive this and idle consolidation as one: it touches and
interrupts both.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from desktop.errors import MemDeskError

log = logging.getLogger("memdesk.retention")


class IdleRetention:
    def __init__(
        self,
        run: Callable[[], int],
        idle_seconds: float,
        on_result: Callable[[int], None] = lambda removed: None,
        on_error: Callable[[Exception], None] = lambda error: None,
    ) -> None:
        """``run`` applies the policy if due and returns how many messages went."""
        self._run = run
        self._idle_seconds = idle_seconds
        self._on_result = on_result
        self._on_error = on_error
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._closed = False

    def touch(self) -> None:
        with self._lock:
            if self._closed or self._idle_seconds <= 0:
                return
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self._idle_seconds, self._fire)
            self._timer.daemon = True
            self._timer.name = "memdesk-idle-retention"
            self._timer.start()

    def interrupt(self) -> None:
        """The user is back: no run starts now. A run under way finishes (one transaction and a
        VACUUM; the user's line is already saved and waits for the store only that long)."""
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            if timer is not threading.current_thread():
                timer.join()

    def _fire(self) -> None:
        with self._lock:
            if self._closed:
                return
        try:
            removed = self._run()
        except MemDeskError as error:
            self._on_error(error)
            return
        except Exception as error:  # background work must never take the chat down
            log.exception("retention failed")
            self._on_error(error)
            return
        if removed:
            self._on_result(removed)


class IdleTasks:
    """Several idle-time tasks driven as one (touch, interrupt, close)."""

    def __init__(self, *tasks) -> None:
        self._tasks = tasks

    def touch(self) -> None:
        for task in self._tasks:
            task.touch()

    def interrupt(self) -> None:
        for task in self._tasks:
            task.interrupt()

    def close(self) -> None:
        for task in self._tasks:
            task.close()
