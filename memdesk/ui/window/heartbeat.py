"""Timed heartbeats (MemGPT): after some minutes of quiet the agent is asked to run on its own.

The interval comes from the settings (0 turns them off); the timer restarts after every turn and
every settings change, and a heartbeat that falls due while the agent cannot run waits another round.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from memdesk.ui.common.errors import reports_errors


class Heartbeat(QObject):
    """Create in the GUI thread.

    Signals:
        due(): the agent should run now (it was idle for the whole interval)
    """

    due = Signal()

    def __init__(
        self, minutes: Callable[[], float], can_run: Callable[[], bool], parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._minutes = minutes
        self._can_run = can_run
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self.on_timeout)

    def restart(self) -> None:
        minutes = self._minutes()
        self.timer.stop()
        if minutes > 0:
            self.timer.start(int(minutes * 60_000))

    def stop(self) -> None:
        self.timer.stop()

    @Slot()
    @reports_errors
    def on_timeout(self) -> None:
        if self._can_run():
            self.due.emit()
        else:
            self.restart()
