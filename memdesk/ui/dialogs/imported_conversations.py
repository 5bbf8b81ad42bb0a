"""Memory > Imported conversations…: the conversations brought in from other assistants, apart from
the agent's own chat (they are never mixed into its transcript). Listed by source, title and date,
filtered as you type; a conversation's messages open read-only, with their original times and
speakers. The agent's imports are listed below with their state: one stopped can be resumed.

Everything shown is read off the GUI thread (workers/reads.py).

Signals:
    resume_requested(int): go on with this import
    loaded(): what was read last is shown
    failed(object): an error for the message bar
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.memory.recall import Message
from memdesk.core.memory.services import MemoryServices
from memdesk.core.transfer.history.listing import (
    ConversationList,
    ImportedConversation,
    ImportState,
    conversations,
    import_states,
    skipped_of,
)
from memdesk.ui.common.buttons import GAP, button, button_row
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import TextView, escape, plain_label, set_plain
from memdesk.ui.workers.reads import Reads

COLUMNS = ["Source", "Title", "Date", "Messages"]
STATES = {"running": "importing", "stopped": "stopped", "paused": "stopped", "done": "done"}


class ImportedConversationsDialog(QDialog):
    resume_requested = Signal(int)
    loaded = Signal()
    failed = Signal(object)

    def __init__(
        self, memory: MemoryServices, agent_id: int, agent_name: str, reads: Reads, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.memory, self.agent_id, self.reads = memory, agent_id, reads
        self.listed: list[ImportedConversation] = []
        self.imports: list[ImportState] = []
        self.shown_id: int | None = None
        self.messages: list[Message] = []
        self.setWindowTitle(f"Imported conversations — {agent_name}")
        self.resize(900, 620)
        layout = QVBoxLayout(self)
        intro = plain_label(
            f"Conversations imported from other assistants into {agent_name}'s memory. They are searchable and"
            " automatic recall finds them, but they are not part of your chat with it."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter by title or source…")
        layout.addWidget(self.filter)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(False)
        self.table.setColumnWidth(1, 260)
        splitter.addWidget(self.table)
        self.view = TextView()  # read-only: what was said then is not edited here
        self.view.setOpenLinks(False)
        splitter.addWidget(self.view)
        splitter.setSizes([420, 480])
        layout.addWidget(splitter, 1)
        self.count = plain_label()
        layout.addWidget(self.count)
        layout.addWidget(QLabel("Imports:"))
        self.imports_list = QListWidget()
        self.imports_list.setMaximumHeight(90)
        layout.addWidget(self.imports_list)
        self.resume_button = button("&Resume import", self.on_resume_clicked)
        layout.addLayout(button_row(self.resume_button, GAP, button("Close", self.close)))
        self._typing = QTimer(self)
        self._typing.setSingleShot(True)
        self._typing.setInterval(200)
        self._typing.timeout.connect(self.refresh)
        self.filter.textChanged.connect(lambda _text: self._typing.start())
        self.table.itemSelectionChanged.connect(self.on_selection_changed)
        self.imports_list.currentRowChanged.connect(lambda _row: self._update_resume())
        self.refresh()

    # --- the list ----------------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def refresh(self) -> None:
        db, agent_id, text = self.memory.db, self.agent_id, self.filter.text()
        self.reads.load(
            (self, "list"),
            lambda: (conversations(db, agent_id, text), import_states(db, agent_id)),
            self._show_list,
            self.failed.emit,
        )

    def _show_list(self, found: tuple[ConversationList, list[ImportState]]) -> None:
        listing, self.imports = found
        self.listed = listing.conversations
        self.table.setRowCount(len(self.listed))
        for row, c in enumerate(self.listed):
            when = c.updated_at or c.started_at
            values = [c.source_name, c.title or "(untitled)", f"{when.astimezone():%Y-%m-%d}" if when else "", ""]
            for column, value in enumerate(values):
                self.table.setItem(row, column, QTableWidgetItem(value))  # plain text, whatever the title holds
            count = QTableWidgetItem()
            count.setData(Qt.ItemDataRole.DisplayRole, c.messages)
            self.table.setItem(row, 3, count)
        shown = len(self.listed)
        if listing.total == 0:
            set_plain(self.count, "No conversations imported yet: File > Import history… brings them in.")
        elif shown < listing.total:
            set_plain(self.count, f"{shown:,} of {listing.total:,} imported conversations shown")
        else:
            set_plain(self.count, f"{listing.total:,} imported conversations")
        self.imports_list.clear()
        for state in self.imports:
            finished = f", {state.finished_at.astimezone():%Y-%m-%d}" if state.finished_at else ""
            item = QListWidgetItem(
                f"{state.source_name}: {state.path} — {STATES.get(state.status, state.status)}"
                f" ({state.conversations_added:,} conversations, {state.messages_added:,} messages added{finished})"
            )
            item.setData(Qt.ItemDataRole.UserRole, state.id)
            self.imports_list.addItem(item)
        self._update_resume()
        ids = [c.id for c in self.listed]
        if self.shown_id in ids:
            self.table.selectRow(ids.index(self.shown_id))
        self.loaded.emit()

    def _update_resume(self) -> None:
        state = self._chosen_import()
        self.resume_button.setEnabled(state is not None and state.status in ("paused", "stopped"))

    def _chosen_import(self) -> ImportState | None:
        row = self.imports_list.currentRow()
        return self.imports[row] if 0 <= row < len(self.imports) else None

    # --- one conversation --------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_selection_changed(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if rows and 0 <= rows[0].row() < len(self.listed):
            self.open_conversation(self.listed[rows[0].row()].id)

    def open_conversation(self, conversation_id: int, highlight: int | None = None) -> None:
        """Show one conversation's messages (``highlight``: a message to point at, e.g. a source)."""
        if conversation_id == self.shown_id and highlight is None and self.messages:
            return
        self.shown_id = conversation_id
        recall, db = self.memory.recall, self.memory.db
        conversation = next((c for c in self.listed if c.id == conversation_id), None)
        self.reads.load(
            (self, "conversation"),
            lambda: (recall.conversation(conversation_id), skipped_of(db, conversation_id)),
            lambda found: self._show_conversation(conversation, *found, highlight),
            self.failed.emit,
        )

    def _show_conversation(
        self,
        conversation: ImportedConversation | None,
        messages: list[Message],
        skipped: list[str],
        highlight: int | None,
    ) -> None:
        self.messages = messages
        parts = []
        if conversation is not None:
            parts.append(f"<h3>{escape(conversation.title or '(untitled)')}</h3>")
            parts.append(f"<p><i>Imported from {escape(conversation.source_name)}</i></p>")
        if skipped:
            parts.append(f"<p><i>Left out: {escape('; '.join(skipped))}</i></p>")
        for m in messages:
            speaker = "You" if m.role == "user" else (m.author or "Assistant")
            style = ' style="background: #fff4ce"' if m.id == highlight else ""
            parts.append(
                f'<p{style}><a name="m{m.id}"></a><b>{escape(speaker)}</b>'
                f" · {escape(f'{m.created_at.astimezone():%Y-%m-%d %H:%M}')}<br>"
                f'<span style="white-space: pre-wrap">{escape(m.search_text)}</span></p>'
            )
        self.view.setHtml("".join(parts))
        if highlight is not None:
            self.view.scrollToAnchor(f"m{highlight}")
        self.loaded.emit()

    @Slot()
    @reports_errors
    def on_resume_clicked(self) -> None:
        state = self._chosen_import()
        if state is not None:
            self.resume_requested.emit(state.id)
            self.resume_button.setEnabled(False)
