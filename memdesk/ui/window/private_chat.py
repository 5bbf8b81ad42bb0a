"""The window's private chat: a checkable action (File > Private chat, Ctrl+Shift+P, and a button
beside Send) that talks to the current agent on an in-memory copy of the store, under a coloured
banner while it lasts.

The session makes the copy (``Session.start_private``), runs the agent on it and saves the user's
messages into it; a message sent while the copy is being made is refused. Turning it off, switching agents or
closing the window discards it and shows the saved conversation again. The memory panels stay on
the saved memory, which is what the banner says: the agent's private edits show in the
conversation as its calls, and an edit in a panel is a saved one.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QSignalBlocker, Signal, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLabel, QStatusBar, QToolButton, QWidget

from memdesk.app.services import Services
from memdesk.core.base.errors import PrivateChatRefusal
from memdesk.ui.common import palette
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.common.window_state import WindowState
from memdesk.ui.panels.chat import ChatPanel
from memdesk.ui.workers.session import SessionWorker

BANNER = "Private chat: nothing is saved; closing it discards it. The memory panels show what is saved."
BANNER_STYLE = (
    f"background: {palette.PRIVATE_BANNER}; color: white; font-weight: bold; padding: 6px; border-radius: 3px"
)


def refuse_saving(state: WindowState, what: str) -> None:
    """Raise PrivateChatRefusal when a private chat is on (documents dropped or added)."""
    if state.private_chat:
        raise PrivateChatRefusal(
            f"{what} during a private chat: nothing of it is saved",
            hint="turn the private chat off (Ctrl+Shift+P) first",
        )


class PrivateChat(QObject):
    """Create in the GUI thread; the window places ``action`` in its File menu.

    Signals:
        start_requested(int): to the session: start a private chat with this agent
        end_requested(): to the session: discard it and go back to the saved conversation
        ended(): the private chat was turned off: show the saved conversation again
    """

    start_requested = Signal(int)
    end_requested = Signal()
    ended = Signal()

    def __init__(
        self,
        worker: SessionWorker,
        chat: ChatPanel,
        state: WindowState,
        hub: ErrorHub,
        status: QStatusBar,
        parent: QWidget,
    ) -> None:
        super().__init__(parent)
        self.state, self.hub, self.status = state, hub, status
        self.services: Services | None = None  # the private chat's copy, once the session made it
        self.starting = False
        self.action = QAction("&Private chat", parent)
        self.action.setCheckable(True)
        self.action.setShortcut(QKeySequence("Ctrl+Shift+P"))
        self.action.setToolTip(
            "Chat without saving anything: the agent reads its memories, closing the chat discards it (Ctrl+Shift+P)"
        )
        self.action.toggled.connect(self.on_toggled)
        self.button = QToolButton()
        self.button.setDefaultAction(self.action)
        self.button.setText("Private")
        self.banner = QLabel(BANNER)
        self.banner.setObjectName("private-chat-banner")
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet(BANNER_STYLE)
        self.banner.hide()
        chat.insert_above_transcript(self.banner)
        chat.compose_buttons.addWidget(self.button)
        self.start_requested.connect(worker.start_private)
        self.end_requested.connect(worker.end_private)
        worker.private_started.connect(self.on_started)

    @property
    def active(self) -> bool:
        return self.starting or self.services is not None

    def _set(self, *, starting: bool, services: Services | None) -> None:
        self.starting, self.services = starting, services
        self.state.private_chat = self.active

    # --- turning it on and off ----------------------------------------------------------------
    @Slot(bool)
    @reports_errors
    def on_toggled(self, on: bool) -> None:
        if on == self.active:
            return
        state = self.state
        if self.starting or state.busy or state.agent_id is None:
            self._show_checked(self.active)
            if self.starting:
                self.hub.notify("The private chat is still starting")
            else:
                self.hub.notify("Stop the current reply (Esc) first" if state.busy else "Choose an agent first")
            return
        if on:
            self.start(state.agent_id)
        else:
            self.end()

    def start(self, agent_id: int) -> None:
        self._set(starting=True, services=None)
        self.state.busy = True  # no message until the copy is made (the session says when it is idle)
        self._show_checked(True)
        self.status.showMessage("Starting a private chat: copying the memories…")
        self.start_requested.emit(agent_id)

    @Slot(object)
    @reports_errors
    def on_started(self, services: Services) -> None:
        if not self.starting:
            return  # discarded while the copy was made (the window closed): the session closes it
        self._set(starting=False, services=services)
        self.banner.show()
        self.status.showMessage("Private chat: nothing is saved", 5000)

    def end(self) -> None:
        """Discard the private chat and show the saved conversation."""
        self.discard()
        self.ended.emit()
        self.status.showMessage("Private chat ended and discarded", 5000)

    def discard(self) -> None:
        """End the private chat, if one is on, without showing anything (switching agents, closing)."""
        if not self.active:
            return
        self._set(starting=False, services=None)  # the session closes the copy: it may be using it
        self.banner.hide()
        self._show_checked(False)
        self.end_requested.emit()

    def _show_checked(self, on: bool) -> None:
        with QSignalBlocker(self.action):
            self.action.setChecked(on)
