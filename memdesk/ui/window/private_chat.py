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
from PySide6.QtWidgets import QLabel, QToolButton

from memdesk.app.services import Services
from memdesk.core.base.errors import PrivateChatRefusal
from memdesk.ui.common import palette
from memdesk.ui.common.errors import reports_errors

BANNER = "Private chat: nothing is saved; closing it discards it. The memory panels show what is saved."
BANNER_STYLE = (
    f"background: {palette.PRIVATE_BANNER}; color: white; font-weight: bold; padding: 6px; border-radius: 3px"
)


class PrivateChat(QObject):
    """Signals:
    start_requested(int): to the worker: start a private chat with this agent
    end_requested(): to the worker: discard it and go back to the saved conversation
    """

    start_requested = Signal(int)
    end_requested = Signal()

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.hub = window.hub
        self.services: Services | None = None  # the private chat's copy, once the worker made it
        self.starting = False
        self.action = QAction("&Private chat", window)
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
        chat = window.chat
        chat.layout().insertWidget(chat.layout().indexOf(chat.transcript), self.banner)
        chat.compose_buttons.addWidget(self.button)
        window.file_menu.insertAction(window.settings_action, self.action)
        worker = window.worker
        self.start_requested.connect(worker.start_private)
        self.end_requested.connect(worker.end_private)
        worker.private_started.connect(self.on_started)

    @property
    def active(self) -> bool:
        return self.starting or self.services is not None

    def refuse_saving(self, what: str) -> None:
        """Raise PrivateChatRefusal when a private chat is on (documents dropped or added)."""
        if self.active:
            raise PrivateChatRefusal(
                f"{what} during a private chat: nothing of it is saved",
                hint="turn the private chat off (Ctrl+Shift+P) first",
            )

    # --- turning it on and off ----------------------------------------------------------------
    @Slot(bool)
    @reports_errors
    def on_toggled(self, on: bool) -> None:
        if on == self.active:
            return
        window = self.window
        if self.starting or window.busy or window.agent_id is None:
            self._show_checked(self.active)
            if self.starting:
                window.hub.notify("The private chat is still starting")
            else:
                window.hub.notify("Stop the current reply (Esc) first" if window.busy else "Choose an agent first")
            return
        if on:
            self.start()
        else:
            self.end()

    def start(self) -> None:
        window = self.window
        self.starting = True
        window.busy = True  # no message until the copy is made (the worker says when it is idle)
        window.chat.set_busy(True)
        self._show_checked(True)
        window.statusBar().showMessage("Starting a private chat: copying the memories…")
        self.start_requested.emit(window.agent_id)

    @Slot(object)
    @reports_errors
    def on_started(self, services: Services) -> None:
        if not self.starting:
            return  # discarded while the copy was made (the window closed): the worker closes it
        self.starting = False
        self.services = services
        self.banner.show()
        self.window.statusBar().showMessage("Private chat: nothing is saved", 5000)

    def end(self) -> None:
        """Discard the private chat and show the saved conversation."""
        self.discard()
        if self.window.agent_id is not None:
            self.window.load_transcript(self.window.agent_id)
        self.window.statusBar().showMessage("Private chat ended and discarded", 5000)

    def discard(self) -> None:
        """End the private chat, if one is on, without showing anything (switching agents, closing)."""
        if not self.active:
            return
        self.starting = False
        self.services = None  # the worker closes the copy: it may be using it
        self.banner.hide()
        self._show_checked(False)
        self.end_requested.emit()

    def _show_checked(self, on: bool) -> None:
        with QSignalBlocker(self.action):
            self.action.setChecked(on)
