"""The first window: shown within half a second of the launch, with Send working, while the rest of
the app is imported and built.

Importing the window's modules and opening the store take about a second of CPU on a 2-core laptop,
and the model loads at the same time in its own process. Before all that, ``memdesk`` shows this
window: it imports Qt and nothing else of MemDesk's that is heavy, stands where the main window will
(the size and place the user left), and takes one message. What is sent here is written to disk at
once (memdesk/session/sent_before_open.py); the main window, when it is built, takes this one's place and
the draft in its message box, and answers what was sent like any message sent while the model
loads.

Shown only when the store can be read before it is opened (not for an encrypted store, whose
passphrase comes first, nor a damaged one, which is offered its snapshot), and only to the one
instance that holds the data folder's lock.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from PySide6.QtCore import QEventLoop, Qt, QTimer, Slot
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from memdesk.app.instance import WINDOW, InstanceLock
from memdesk.core.base.errors import AlreadyRunningError, MemDeskError
from memdesk.core.base.paths import APP_ID, ICON, Paths
from memdesk.core.base.settings_table import Settings
from memdesk.session.sent_before_open import SentBeforeOpen
from memdesk.ui.common.compose import ComposeBox
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import WILL_BE_ANSWERED
from memdesk.ui.window.layout import restore_size_and_place

#: Printed (with --timing) before each milestone, so bench.startup can read when it happened.
TIMING_PREFIX = "memdesk-timing"
T = TypeVar("T")
OPENING = "Opening your memory… you can send a message now."
SAVED = f"Saved. It {WILL_BE_ANSWERED}."
#: How often the first window looks whether the background import has finished.
POLL_MS = 15


def application(qt_args: list[str]) -> QApplication:
    """The one QApplication of this process, named and iconed for the desktop."""
    existing = QApplication.instance()
    app = QApplication([sys.argv[0], *qt_args]) if existing is None else existing
    if not isinstance(app, QApplication):
        raise RuntimeError(f"the window needs a QApplication, not a {type(app).__name__}")
    app.setApplicationName("MemDesk")
    app.setDesktopFileName(APP_ID)  # lets Wayland compositors match the window to its .desktop entry
    app.setWindowIcon(QIcon(str(ICON)))
    return app


class FirstWindow(QMainWindow):
    """One message box and Send; what was sent is listed with when it will be answered."""

    def __init__(self, paths: Paths, lock: InstanceLock, settings: Settings) -> None:
        super().__init__()
        self.paths = paths
        self.lock = lock  # the data folder's; the main window's run keeps holding it
        self.inbox = SentBeforeOpen(paths.sent_before_open)
        self.dismissed = False  # closed by the user before the main window came: the start ends there
        self._handing_over = False
        # Closing this window must not end the event loops while the app is still being imported
        # (Qt's quit ends every running loop); the user's close is noted instead (``dismissed``).
        self._quit_on_last_closed = QApplication.quitOnLastWindowClosed()
        QApplication.setQuitOnLastWindowClosed(False)
        self.setWindowTitle("MemDesk")
        body = QWidget()
        layout = QVBoxLayout(body)
        self.status = QLabel(OPENING)
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.transcript = QPlainTextEdit()
        self.transcript.setReadOnly(True)
        self.transcript.setPlaceholderText("Your conversation appears here in a moment.")
        self.compose = ComposeBox()
        self.compose.setPlaceholderText("Message (Enter sends, Shift+Enter for a new line)")
        self.compose.setMaximumHeight(90)
        self.send_button = QPushButton("Send")
        row = QHBoxLayout()
        row.addWidget(self.compose, 1)
        row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self.status)
        layout.addWidget(self.transcript, 1)
        layout.addLayout(row)
        self.setCentralWidget(body)
        self.compose.submitted.connect(self.on_send)
        self.send_button.clicked.connect(self.on_send)
        screen = QApplication.primaryScreen()
        restore_size_and_place(self, settings.window_layout, screen.availableSize())
        self.compose.setFocus()

    @Slot()
    @reports_errors  # no window to show it yet: a bug here is logged, and the text stays in the box
    def on_send(self) -> None:
        """One message, as in the main window while a turn runs: Send waits until it is answered."""
        text = self.compose.toPlainText().strip()
        if not text or not self.send_button.isEnabled():
            return
        try:
            self.inbox.add(text)
        except OSError as error:  # the text stays in the box: nothing is lost
            self.status.setText(f"Your message could not be saved ({error.strerror or error}); it is still in the box.")
            return
        self.compose.clear()
        self.transcript.appendPlainText(f"You: {text}\n— saved; {WILL_BE_ANSWERED}\n")
        self.status.setText(SAVED)
        self.send_button.setEnabled(False)

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt API
        if not self._handing_over:
            self.dismissed = True  # what was sent stays on disk: the next start answers it
        super().closeEvent(event)

    def draft(self) -> str:
        """What the user typed and has not sent: the main window's message box takes it."""
        return self.compose.toPlainText()

    def discard(self) -> None:
        """Close it without ending the start (its messages stay on disk); nothing once handed over."""
        if not self._handing_over:
            self._handing_over = True
            self.close()
            QApplication.setQuitOnLastWindowClosed(self._quit_on_last_closed)

    def hand_over(self, window: QMainWindow, compose: QPlainTextEdit) -> None:
        """``window`` takes this one's place, and ``compose`` (its message box) the draft."""
        if self.draft():
            compose.setPlainText(self.draft())
            compose.moveCursor(compose.textCursor().MoveOperation.End)
        window.activateWindow()
        compose.setFocus()
        self.discard()


def milestones(timing: bool) -> Callable[[str], None]:
    """Prints, with ``--timing``, when each start-up milestone is reached (bench.startup reads them
    as they arrive); nothing otherwise."""
    started = time.perf_counter()

    def milestone(name: str) -> None:
        if timing:
            print(f"{TIMING_PREFIX} {name} {time.perf_counter() - started:.4f}", flush=True)

    return milestone


def open_first_window(
    paths: Paths, settings: Settings | None, milestone: Callable[[str], None] = lambda _name: None
) -> FirstWindow | None:
    """The first window, shown; None when the store cannot be read yet (``settings`` None), the data
    folder is not usable, or another MemDesk holds it (the main start then says so)."""
    if settings is None:
        return None
    try:
        paths = paths.ensure()
        lock = InstanceLock(paths.instance_lock, WINDOW).acquire()
    except (MemDeskError, AlreadyRunningError, OSError):
        return None
    app = application([])  # memdesk takes no Qt options; memdesk.ui.startup.main.run does, without a first window
    window = FirstWindow(paths, lock, settings)
    window.show()
    app.processEvents()
    milestone("window_shown")
    milestone("send_enabled")
    return window


def while_shown(work: Callable[[], T], window: FirstWindow | None) -> T:
    """``work()`` (an import); with a first window, in a background thread while the window keeps
    taking keys and clicks (an import on the GUI thread would freeze it for a second). An error of
    ``work`` is raised here."""
    if window is None:
        return work()
    outcome: list = []

    def run() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as error:  # noqa: BLE001 - raised again on the GUI thread
            outcome.append((False, error))

    loop = QEventLoop()
    poll = QTimer()
    poll.setInterval(POLL_MS)
    poll.timeout.connect(lambda: loop.quit() if outcome else None)
    threading.Thread(target=run, name="import-window", daemon=True).start()
    poll.start()
    while not outcome:
        loop.exec()
    poll.stop()
    ok, result = outcome[0]
    if not ok:
        raise result
    return result
