"""Retention while a terminal user is idle: after some minutes without activity, a confirmed and
due policy is applied (retention.py); a store busy with another writer waits for the next idle
moment (memdesk.session.idle_timer). The window does the same with a QTimer (ui/dialogs/forget.py).

``IdleTasks`` lets the terminal chat drive this and idle consolidation as one: it touches and
interrupts both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from memdesk.core.base.errors import MemDeskError, StoreBusyError
from memdesk.session.idle_timer import IdleTimer

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
        self._on_result = on_result
        self._on_error = on_error
        self._timer = IdleTimer("memdesk-idle-retention", idle_seconds, self._fire)

    def touch(self) -> None:
        self._timer.touch()

    def interrupt(self) -> None:
        """The user is back: no run starts now. A run under way finishes (one transaction and a
        VACUUM; the user's line is already saved and waits for the store only that long)."""
        self._timer.interrupt(wait=False)

    def close(self) -> None:
        self._timer.close()

    def _fire(self) -> bool:
        try:
            removed = self._run()
        except StoreBusyError:
            return True  # another writer held the store: at the next idle moment
        except MemDeskError as error:
            self._on_error(error)
            return False
        except Exception as error:  # background work must never take the chat down
            log.exception("retention failed")
            self._on_error(error)
            return False
        if removed:
            self._on_result(removed)
        return False


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
