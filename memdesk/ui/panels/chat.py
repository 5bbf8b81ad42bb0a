"""The chat panel: transcript, conversation search (Ctrl+F), the message box and Send/Stop.

Signals:
    send_requested(str): the user sent a message
    stop_requested(): the user asked to stop generation
    search_requested(str): search the conversation history for this text
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.memory.page import Page
from memdesk.ui.common import palette
from memdesk.ui.common.compose import ComposeBox
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import plain_label
from memdesk.ui.panels.transcript import Transcript


class ChatPanel(QWidget):
    send_requested = Signal(str)
    stop_requested = Signal()
    search_requested = Signal(str)
    message_requested = Signal(int)  # a search result chosen: show that stored message

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        self.title = plain_label("No agent")  # the agent's name: an import may make it look like markup
        self.title.setStyleSheet("font-weight: bold; font-size: 14px")
        self.status = plain_label()
        self.status.setStyleSheet(f"color: {palette.muted()}")
        self.details = QCheckBox("Show inner monologue and function calls")
        top.addWidget(self.title)
        top.addWidget(self.status, 1)
        top.addWidget(self.details)
        layout.addLayout(top)

        self.search_bar = QWidget()
        search_layout = QVBoxLayout(self.search_bar)
        search_layout.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.search_box = QLineEdit()
        self.search_box.setPlaceholderText("Search the whole conversation history (Esc closes)")
        self.search_close = QPushButton("Close")
        row.addWidget(self.search_box, 1)
        row.addWidget(self.search_close)
        search_layout.addLayout(row)
        self.search_results = QListWidget()
        self.search_results.setMaximumHeight(140)
        search_layout.addWidget(self.search_results)
        self.search_bar.hide()
        layout.addWidget(self.search_bar)

        self.transcript = Transcript()
        layout.addWidget(self.transcript, 1)
        self._layout = layout
        compose_row = QHBoxLayout()
        self.compose = ComposeBox()
        self.compose.setPlaceholderText("Message (Enter sends, Shift+Enter for a new line)")
        self.compose.setMaximumHeight(90)
        self.send_button = QPushButton("Send")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setEnabled(False)
        buttons = self.compose_buttons = QVBoxLayout()  # the window adds its own (the private chat's)
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        compose_row.addWidget(self.compose, 1)
        compose_row.addLayout(buttons)
        layout.addLayout(compose_row)
        self.busy = False
        self.can_send = False
        self._connect_signals()

    def _connect_signals(self) -> None:
        self.compose.submitted.connect(self.on_send_clicked)
        self.send_button.clicked.connect(self.on_send_clicked)
        self.stop_button.clicked.connect(self.stop_requested)
        self.details.toggled.connect(self.transcript.set_show_details)
        self.search_box.returnPressed.connect(self.on_search_entered)
        self.search_close.clicked.connect(self.close_search)
        self.search_results.itemActivated.connect(self.on_search_result_activated)
        self.search_results.itemClicked.connect(self.on_search_result_activated)

    def insert_above_transcript(self, widget: QWidget) -> None:
        """A line the window adds above the conversation (the private chat's banner)."""
        self._layout.insertWidget(self._layout.indexOf(self.transcript), widget)

    # --- state -----------------------------------------------------------------------------
    def set_ready(self, can_send: bool, reason: str = "") -> None:
        self.can_send = can_send
        self.status.setText(reason)
        self._update_buttons()

    def set_busy(self, busy: bool) -> None:
        self.busy = busy
        self._update_buttons()

    def _update_buttons(self) -> None:
        self.send_button.setEnabled(self.can_send and not self.busy)
        self.stop_button.setEnabled(self.busy)

    # --- sending ---------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_send_clicked(self) -> None:
        text = self.compose.toPlainText().strip()
        if not text or not self.can_send or self.busy:
            return
        self.compose.clear()
        self.send_requested.emit(text)

    # --- search ----------------------------------------------------------------------------
    def open_search(self) -> None:
        self.search_bar.show()
        self.search_box.setFocus()
        self.search_box.selectAll()

    @Slot()
    @reports_errors
    def close_search(self) -> None:
        self.search_bar.hide()
        self.compose.setFocus()

    @Slot()
    @reports_errors
    def on_search_entered(self) -> None:
        if self.search_box.text().strip():
            self.search_requested.emit(self.search_box.text())

    def show_search_pending(self, query: str) -> None:
        self.search_results.clear()
        item = QListWidgetItem(f"Searching for {query!r}…")
        item.setFlags(Qt.ItemFlag.NoItemFlags)
        self.search_results.addItem(item)

    def show_search_results(self, page: Page) -> None:
        self.search_results.clear()
        header = QListWidgetItem(
            f"{page.total} messages match"
            + (f" (showing the newest {len(page.hits)})" if page.total > len(page.hits) else "")
        )
        header.setFlags(Qt.ItemFlag.NoItemFlags)
        self.search_results.addItem(header)
        for message in page.hits:
            who = "You" if message.role == "user" else "Agent"
            item = QListWidgetItem(f"{message.created_at:%Y-%m-%d %H:%M} · {who}: {message.search_text[:160]}")
            item.setData(Qt.ItemDataRole.UserRole, message.id)
            self.search_results.addItem(item)

    @Slot(QListWidgetItem)
    @reports_errors
    def on_search_result_activated(self, item: QListWidgetItem) -> None:
        message_id = item.data(Qt.ItemDataRole.UserRole)
        if isinstance(message_id, int):
            self.message_requested.emit(message_id)  # it may be older than the page shown
