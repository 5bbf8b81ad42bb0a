"""The running window comes forward when a second start asks it to (see memdesk/app/instance.py).

The request is a file the second start leaves in the data folder, seen through the folder's
change notifications: no socket, and nothing to clean up when either process is killed.
"""

from __future__ import annotations

from PySide6.QtCore import QFileSystemWatcher, QObject, Signal, Slot
from PySide6.QtWidgets import QWidget

from memdesk.app.instance import take_come_forward_request
from memdesk.core.base.paths import Paths
from memdesk.ui.common.errors import reports_errors


class ComeForwardWatcher(QObject):
    """Emits ``requested`` (and brings ``window`` forward, where the window system allows) each
    time a second start asks."""

    requested = Signal()

    def __init__(self, paths: Paths, window: QWidget) -> None:
        super().__init__(window)
        self._request = paths.raise_request
        self._window = window
        take_come_forward_request(self._request)  # left by a start that came while none was running
        self._watcher = QFileSystemWatcher([str(paths.home)], self)
        self._watcher.directoryChanged.connect(self._changed)

    @Slot(str)
    @reports_errors
    def _changed(self, _folder: str) -> None:
        if not take_come_forward_request(self._request):
            return
        window = self._window
        if window.isMinimized():
            window.showNormal()
        window.show()
        window.raise_()
        window.activateWindow()
        self.requested.emit()
