"""Consent for tools that touch the user's machine or network, asked in the window.

``allow`` runs in the worker thread: it posts the question to the GUI thread and blocks until the
user answers (or the turn is stopped, which counts as a denial).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from memdesk.core.runtime.base import CancelToken
from memdesk.core.tools.consent_text import ConsentText
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import escape, set_rich

ONCE, ALWAYS, DENY = "once", "always", "deny"


@dataclass
class ConsentRequest:
    agent_id: int
    tool: str
    summary: str
    answer: str = DENY
    done: threading.Event = field(default_factory=threading.Event)


class QtConsentPolicy(QObject):
    """A ConsentPolicy answered by the user. Create in the GUI thread.

    Signals:
        asked(object): a ConsentRequest waiting for ``answer()``
    """

    asked = Signal(object)

    def __init__(self, cancel_token: Callable[[], CancelToken] | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._cancel_token = cancel_token
        self._always: set[tuple[int, str]] = set()
        self._lock = threading.Lock()
        self._pending: list[ConsentRequest] = []
        self._closed = False

    def allow(self, agent_id: int, tool: str, summary: str) -> bool:
        with self._lock:
            if (agent_id, tool) in self._always:
                return True
            if self._closed:
                return False
            request = ConsentRequest(agent_id, tool, summary)
            self._pending.append(request)
        self.asked.emit(request)
        while not request.done.wait(0.05):
            token = self._cancel_token() if self._cancel_token else None
            if token is not None and token.cancelled:
                self._settle(request, DENY)
        with self._lock:
            if request.answer == ALWAYS:
                self._always.add((agent_id, tool))
        return request.answer in (ONCE, ALWAYS)

    @Slot(object, str)
    @reports_errors
    def answer(self, request: ConsentRequest, choice: str) -> None:
        """The user's choice, from the dialog (GUI thread)."""
        self._settle(request, choice)

    def _settle(self, request: ConsentRequest, choice: str) -> None:
        with self._lock:
            if request.done.is_set():
                return
            request.answer = choice
            if request in self._pending:
                self._pending.remove(request)
            request.done.set()

    @Slot(int)
    @reports_errors
    def forget_agent(self, agent_id: int) -> None:
        """Drop the deleted agent's "Always allow" answers: they were given to that agent only."""
        with self._lock:
            self._always = {pair for pair in self._always if pair[0] != agent_id}

    def close(self) -> None:
        """Deny everything still waiting (the window is closing)."""
        with self._lock:
            self._closed = True
            pending = list(self._pending)
        for request in pending:
            self._settle(request, DENY)


class ConsentDialog(QDialog):
    """Asks once per request; non-modal so the rest of the window stays usable.

    Signals:
        answered(object, str): the request and ONCE, ALWAYS or DENY
    """

    answered = Signal(object, str)

    def __init__(self, request: ConsentRequest, agent_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.request = request
        self.setWindowTitle("Allow this action?")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        layout = QVBoxLayout(self)
        question = ConsentText.parse(request.summary)
        # The agent's name, the tool's and the call's arguments may come from an imported file or
        # the model: escaped, never read as markup, so the dialog asks what will really run.
        self.text = QLabel()
        set_rich(
            self.text,
            f"<b>{escape(agent_name)}</b> wants to run <code>{escape(request.tool)}</code>:"
            f"<br><br>{escape(question.action)}",
        )
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.text)
        self._question = question
        self.data = QPlainTextEdit(question.preview)
        self.data.setReadOnly(True)
        self.data.setVisible(bool(question.data))
        layout.addWidget(self.data)
        self.show_all = QPushButton(f"Show all ({len(question.data)} characters)")
        self.show_all.setVisible(question.is_shortened)
        layout.addWidget(self.show_all)
        buttons = QDialogButtonBox()
        self.allow_once = QPushButton("Allow once")
        self.allow_always = QPushButton("Always allow for this agent")
        self.deny = QPushButton("Deny")
        for button in (self.allow_once, self.allow_always):
            buttons.addButton(button, QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.addButton(self.deny, QDialogButtonBox.ButtonRole.RejectRole)
        layout.addWidget(buttons)
        self._connect_signals()
        self.deny.setDefault(True)

    def _connect_signals(self) -> None:
        self.allow_once.clicked.connect(lambda: self._choose(ONCE))
        self.allow_always.clicked.connect(lambda: self._choose(ALWAYS))
        self.deny.clicked.connect(lambda: self._choose(DENY))
        self.show_all.clicked.connect(self.on_show_all_clicked)
        self.rejected.connect(lambda: self._choose(DENY))

    @Slot()
    @reports_errors
    def on_show_all_clicked(self) -> None:
        self.data.setPlainText(self._question.data)
        self.show_all.hide()

    def _choose(self, choice: str) -> None:
        if not self.request.done.is_set():
            self.answered.emit(self.request, choice)
        self.close()
