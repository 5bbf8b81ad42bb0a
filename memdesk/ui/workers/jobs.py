"""Short background jobs (archival search, passage edits, exports) on Qt's thread pool.

Results come back through a relay that lives in the GUI thread, so callbacks always run there
whatever thread finished the job.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot

from memdesk.ui.common.errors import reports_errors


class _JobSignals(QObject):
    done = Signal(int, object)
    failed = Signal(int, object)


class _Job(QRunnable):
    def __init__(self, job_id: int, function: Callable[[], Any], signals: _JobSignals) -> None:
        super().__init__()
        self._id = job_id
        self._function = function
        self._signals = signals

    def run(self) -> None:
        try:
            result = self._function()
        except BaseException as error:  # every failure must reach the error bar, not vanish in a pool thread
            self._signals.failed.emit(self._id, error)
        else:
            self._signals.done.emit(self._id, result)


class Jobs(QObject):
    """Runs callables off the GUI thread. Create in the GUI thread.

    Signals:
        failed(object): a job without its own error callback raised this exception.
    """

    failed = Signal(object)

    def __init__(self, parent: QObject | None = None, *, max_threads: int = 2) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max_threads)
        self._signals = _JobSignals(self)
        self._ids = itertools.count(1)
        self._callbacks: dict[int, tuple[Callable[[Any], None] | None, Callable[[BaseException], None] | None]] = {}
        self._signals.done.connect(self.on_done)
        self._signals.failed.connect(self.on_failed)

    def run(
        self,
        function: Callable[[], Any],
        on_done: Callable[[Any], None] | None = None,
        on_failed: Callable[[BaseException], None] | None = None,
    ) -> int:
        job_id = next(self._ids)
        self._callbacks[job_id] = (on_done, on_failed)
        self._pool.start(_Job(job_id, function, self._signals))
        return job_id

    @property
    def pending(self) -> int:
        return len(self._callbacks)

    def wait(self, msecs: int = 30000) -> bool:
        return self._pool.waitForDone(msecs)

    @Slot(int, object)
    @reports_errors
    def on_done(self, job_id: int, result: Any) -> None:
        on_done, _ = self._callbacks.pop(job_id, (None, None))
        if on_done is not None:
            on_done(result)

    @Slot(int, object)
    @reports_errors
    def on_failed(self, job_id: int, error: BaseException) -> None:
        _, on_failed = self._callbacks.pop(job_id, (None, None))
        if on_failed is not None:
            on_failed(error)
        else:
            self.failed.emit(error)
