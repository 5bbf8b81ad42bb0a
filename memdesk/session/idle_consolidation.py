"""Consolidation while a terminal user is idle: a pass after some minutes without activity, stopped
(keeping what it finished) the moment the user acts again, and tried again at the next idle moment
when the store was busy (memdesk.session.idle_timer).

The window does the same with a QTimer and its worker thread (memdesk/ui/dialogs/consolidation.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from memdesk.core.agent.consolidation.consolidator import BUSY, Consolidator, PassResult
from memdesk.core.base.errors import MemDeskError
from memdesk.core.runtime.base import CancelToken
from memdesk.session.idle_timer import IdleTimer

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
        self._on_result = on_result
        self._on_error = on_error
        self._lock = threading.Lock()
        self._cancel = CancelToken()
        self._timer = IdleTimer("memdesk-idle-consolidation", idle_seconds, self._run)

    def touch(self) -> None:
        """The user just did something: start counting idle time again."""
        self._timer.touch()

    def interrupt(self) -> None:
        """The user is back: stop the timer and any running pass, and wait until it has stopped."""
        with self._lock:
            self._cancel.cancel()
        self._timer.interrupt(wait=True)

    def close(self) -> None:
        with self._lock:
            self._cancel.cancel()
        self._timer.close()

    @property
    def running(self) -> bool:
        return self._timer.running

    def _run(self) -> bool:
        with self._lock:
            if self._timer.closed:
                return False
            self._cancel = CancelToken()
            cancel = self._cancel
        try:
            consolidation = self._make_pass()
            if not consolidation.due():
                return False
            result = consolidation.run_when_idle(cancel)
        except MemDeskError as error:
            if not cancel.cancelled:
                self._on_error(error)
            return False
        except Exception as error:  # a background pass must never take the chat down
            log.exception("idle consolidation failed")
            self._on_error(error)
            return False
        if result.status == BUSY:
            return True
        self._on_result(result)
        return False
