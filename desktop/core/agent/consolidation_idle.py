"""Consolidation while a terminal user is idle: a timer thread that runs a pass after some minutes
without activity, and stops it (keeping what it finished) the moment the user acts again.

The window does the same with a QTimer and its worker thread (desktop/ui/qt_consolidation.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from desktop.core.agent.consolidation import Consolidator, PassResult
from desktop.core.runtime.base import CancelToken
from desktop.errors import MemDeskError

log = logging.getLogger("memdesk.consolidation")


class IdleConsolidation:
    def __init__(
        self,
        make_pass: Callable[[], Consolidator],
        idle_seconds: float,
        on_result: Callable[[PassResult], None] = lambda result: None,
        on_error: Callable[[Exception], None] = lambda error: None,
    ) -> None:
        self._make_pass = make_pass
        self._idle_seconds = idle_seconds
        self._on_result = on_result
        self._on_error = on_error
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._cancel = CancelToken()
        self._closed = False

    def touch(self) -> None:
        """The user just did something: start counting idle time again."""
        with self._lock:
            if self._closed or self._idle_seconds <= 0:
                return
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self._idle_seconds, self._fire)
            self._timer.daemon = True
            self._timer.name = "memdesk-idle-consolidation"
            self._timer.start()

    def interrupt(self) -> None:
        """The user is back: stop the timer and any running pass, and wait until it has stopped."""
        with self._lock:
            timer, self._timer = self._timer, None
            self._cancel.cancel()
        if timer is not None:
            timer.cancel()
            if timer is not threading.current_thread():
                timer.join()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.interrupt()

    @property
    def running(self) -> bool:
        timer = self._timer
        return timer is not None and timer.is_alive()

    def _fire(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._cancel = CancelToken()
            cancel = self._cancel
        try:
            consolidation = self._make_pass()
            if not consolidation.due():
                return
            result = consolidation.run(cancel)
        except MemDeskError as error:
            if not cancel.cancelled:
                self._on_error(error)
            return
        except Exception as error:  # a background pass must never take the chat down
            log.exception("idle consolidation failed")
            self._on_error(error)
            return
        self._on_result(result)
