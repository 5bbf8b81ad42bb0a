"""Memory > What MemDesk learned…: what the background work proposes core memory should hold about
the person, read from the conversations they imported ("What MemDesk learned from your ChatGPT
history"). Each proposal shows the messages it came from; the person accepts it as it reads,
edits it first, or rejects it. Nothing enters core memory unreviewed: accepting writes it through
core memory's normal path (memdesk.core.transfer.history.learning), so Memory history records it
and undo takes it back.

The list is read off the GUI thread (workers/reads.py); a decision is one short write on the
window's own connection, so a full block is answered in place.

Signals:
    memory_changed(list): labels of core memory blocks an accepted proposal changed
    loaded(): the proposals read last are shown
    failed(object): an error for the message bar
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QDialog,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.base.errors import MemDeskError
from memdesk.core.memory.services import MemoryServices
from memdesk.core.transfer.history.learning import Learning
from memdesk.core.transfer.history.listing import Learned, LearnedItem, learned
from memdesk.ui.common.buttons import GAP, button, button_row
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import TextView, escape, plain_label, set_plain
from memdesk.ui.workers.reads import Reads

KINDS = {
    "name": "Name",
    "place": "Places",
    "people": "People",
    "work": "Work",
    "preference": "Preferences",
    "fact": "Dated facts",
}


class LearnedDialog(QDialog):
    memory_changed = Signal(list)
    loaded = Signal()
    failed = Signal(object)

    def __init__(
        self, memory: MemoryServices, agent_id: int, agent_name: str, reads: Reads, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.memory, self.agent_id, self.reads = memory, agent_id, reads
        self.learned = Learned([])
        self.setWindowTitle("What MemDesk learned")
        self.resize(720, 560)
        layout = QVBoxLayout(self)
        self.heading = QLabel()
        self.heading.setTextFormat(Qt.TextFormat.PlainText)
        font = self.heading.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.2)
        self.heading.setFont(font)
        layout.addWidget(self.heading)
        intro = plain_label(
            f"Read from the conversations you imported. Nothing goes into {agent_name}'s core memory until you"
            " accept it; accepting adds it to the block named, recorded in Memory history, where Undo takes it"
            " back."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        splitter = QSplitter(Qt.Orientation.Vertical)
        self.list = QListWidget()
        splitter.addWidget(self.list)
        detail = QWidget()
        detail_layout = QVBoxLayout(detail)
        detail_layout.setContentsMargins(0, 0, 0, 0)
        detail_layout.addWidget(QLabel("What core memory would say (edit it before accepting if you like):"))
        self.editor = QPlainTextEdit()
        self.editor.setMaximumHeight(80)
        detail_layout.addWidget(self.editor)
        detail_layout.addWidget(QLabel("Where it came from:"))
        self.sources = TextView()
        self.sources.setOpenLinks(False)
        detail_layout.addWidget(self.sources, 1)
        splitter.addWidget(detail)
        layout.addWidget(splitter, 1)
        self.empty = plain_label("Nothing waits for your review.")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.empty)
        self.outcome = plain_label()
        self.outcome.setWordWrap(True)
        layout.addWidget(self.outcome)
        self.accept_button = button("&Accept", self.on_accept_clicked, default=True)
        self.reject_button = button("&Reject", self.on_reject_clicked)
        layout.addLayout(button_row(self.accept_button, self.reject_button, GAP, button("Close", self.close)))
        self.list.currentRowChanged.connect(self.on_selected)
        self.editor.textChanged.connect(self._update_buttons)
        self.refresh()

    # --- reading -----------------------------------------------------------------------------------
    def refresh(self) -> None:
        memory, agent_id = self.memory, self.agent_id
        self.reads.load((self, "learned"), lambda: learned(memory, agent_id), self._show, self.failed.emit)

    def _show(self, found: Learned) -> None:
        keep = self.selected()
        self.learned = found
        self.heading.setText(found.title)
        self.setWindowTitle(found.title)
        self.list.clear()
        for item in found.items:
            p = item.proposal
            row = QListWidgetItem(f"{p.text}    ({KINDS.get(p.kind, p.kind.title())}, to the {p.label} block)")
            row.setData(Qt.ItemDataRole.UserRole, p.id)
            self.list.addItem(row)
        has_any = self.list.count() > 0
        self.list.setVisible(has_any)
        self.empty.setVisible(not has_any)
        ids = [i.proposal.id for i in found.items]
        self.list.setCurrentRow(ids.index(keep.proposal.id) if keep and keep.proposal.id in ids else 0)
        if not has_any:
            self.on_selected(-1)
        self.loaded.emit()

    def selected(self) -> LearnedItem | None:
        row = self.list.currentRow()
        return self.learned.items[row] if 0 <= row < len(self.learned.items) else None

    @Slot(int)
    @reports_errors
    def on_selected(self, _row: int) -> None:
        item = self.selected()
        self.editor.blockSignals(True)
        self.editor.setPlainText(item.proposal.text if item else "")
        self.editor.blockSignals(False)
        self.sources.setHtml(_sources_html(item) if item else "")
        self._update_buttons()

    @Slot()
    @reports_errors
    def _update_buttons(self) -> None:
        item = self.selected()
        edited = item is not None and self.editor.toPlainText().strip() != item.proposal.text
        self.accept_button.setEnabled(item is not None and bool(self.editor.toPlainText().strip()))
        self.accept_button.setText("&Accept as edited" if edited else "&Accept")
        self.reject_button.setEnabled(item is not None)
        self.editor.setEnabled(item is not None)

    # --- deciding ----------------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_accept_clicked(self) -> None:
        item = self.selected()
        if item is None:
            return
        text = self.editor.toPlainText().strip()
        edited = text != item.proposal.text
        try:
            done = Learning(self.memory).accept(item.proposal.id, text if edited else None)
        except MemDeskError as error:
            set_plain(self.outcome, error.user_message)
            return
        set_plain(self.outcome, f"Added to {done.label}: {done.text}")
        self.memory_changed.emit([done.label])
        self.refresh()

    @Slot()
    @reports_errors
    def on_reject_clicked(self) -> None:
        item = self.selected()
        if item is None:
            return
        Learning(self.memory).reject(item.proposal.id)
        set_plain(self.outcome, f"Rejected: {item.proposal.text} (it will not be proposed again)")
        self.refresh()


def _sources_html(item: LearnedItem) -> str:
    if not item.sources:
        return "<p>From the knowledge graph's facts about you.</p>"
    parts = []
    for when, where, said in item.sources:
        parts.append(
            f"<p><b>{escape(f'{when.astimezone():%Y-%m-%d %H:%M}')}</b> · {escape(where)}<br>"
            f'<span style="white-space: pre-wrap">“{escape(said)}”</span></p>'
        )
    return "".join(parts)
