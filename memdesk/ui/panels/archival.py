"""Archival memory: the hits of the latest archival and conversation searches (the agent's or the
user's), a manual search box, and a browser to edit or delete passages (multi-select).

Embedding a query or an edited passage can take a moment, so both run as background jobs, as do
deletions; the passages listed are read through the panels' reads (memdesk.ui.workers.reads).

Signals:
    changed(): passages were edited or deleted
    loaded(): the passages read last are shown
    failed(object): an error for the message bar
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QInputDialog,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.memory.archival import ArchivalMemory, Passage, PassageHit
from memdesk.core.memory.recall import Message
from memdesk.ui.common import tables
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import TextView, escape, literal
from memdesk.ui.workers.jobs import Jobs
from memdesk.ui.workers.reads import Reads

HIT_COLUMNS = ["Kind", "Score", "Text", "Source", "Time"]


#: The passages the browser lists (the newest first).
LISTED = 500


class ArchivalPanel(QWidget):
    changed = Signal()
    loaded = Signal()
    failed = Signal(object)

    def __init__(self, archival: ArchivalMemory, jobs: Jobs, reads: Reads, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.archival = archival
        self.jobs = jobs
        self.reads = reads
        self.agent_id: int | None = None
        self.hits: list[tuple[str, Any]] = []
        self.passages: list[Passage] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.tabs = QTabWidget()
        layout.addWidget(self.tabs)

        hits_page = QWidget()
        hits_layout = QVBoxLayout(hits_page)
        self.search_box = QLineEdit()
        self.search_box.setPlaceholderText("Search archival memory by meaning…")
        hits_layout.addWidget(self.search_box)
        splitter = QSplitter(Qt.Orientation.Vertical)
        self.hits_table = _passages_table(HIT_COLUMNS)
        self.detail = TextView()
        splitter.addWidget(self.hits_table)
        splitter.addWidget(self.detail)
        hits_layout.addWidget(splitter, 1)
        self.tabs.addTab(hits_page, "Search hits")

        browse_page = QWidget()
        browse_layout = QVBoxLayout(browse_page)
        self.passages_table = _passages_table(["Id", "Text", "Source", "Time"])
        self.passages_table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        browse_layout.addWidget(self.passages_table, 1)
        row = QHBoxLayout()
        self.refresh_button = QPushButton("Refresh")
        self.edit_button = QPushButton("Edit…")
        self.delete_button = QPushButton("Delete selected")
        for button in (self.refresh_button, self.edit_button, self.delete_button):
            row.addWidget(button)
        browse_layout.addLayout(row)
        self.tabs.addTab(browse_page, "All passages")
        self._connect_signals()

    def _connect_signals(self) -> None:
        self.search_box.returnPressed.connect(self.on_search_entered)
        self.hits_table.itemSelectionChanged.connect(self.on_hit_selected)
        self.refresh_button.clicked.connect(self.refresh)
        self.edit_button.clicked.connect(self.on_edit_clicked)
        self.delete_button.clicked.connect(self.on_delete_clicked)
        self.passages_table.itemDoubleClicked.connect(lambda _item: self.on_edit_clicked())

    def set_agent(self, agent_id: int | None) -> None:
        self.agent_id = agent_id
        self.show_hits([])
        self.refresh()

    # --- hits ------------------------------------------------------------------------------
    @Slot(list)
    @reports_errors
    def show_hits(self, hits: list[tuple[str, Any]]) -> None:
        self.hits = list(hits)
        self.hits_table.setRowCount(len(self.hits))
        for row, (kind, hit) in enumerate(self.hits):
            if isinstance(hit, PassageHit):
                values = [
                    kind,
                    f"{hit.score:.3f}",
                    hit.passage.text,
                    hit.passage.citation.label(),
                    f"{hit.passage.created_at:%Y-%m-%d %H:%M}",
                ]
            elif isinstance(hit, Message):
                values = [kind, "", hit.search_text, "conversation", f"{hit.created_at:%Y-%m-%d %H:%M}"]
            else:
                values = [kind, "", str(hit), "", ""]
            for column, value in enumerate(values):
                self.hits_table.setItem(row, column, QTableWidgetItem(value.replace("\n", " ")[:300]))
        self.detail.clear()
        if self.hits:
            self.tabs.setCurrentIndex(0)

    @Slot()
    @reports_errors
    def on_hit_selected(self) -> None:
        rows = self.hits_table.selectionModel().selectedRows()
        if not rows:
            return
        kind, hit = self.hits[rows[0].row()]
        if isinstance(hit, PassageHit):
            source = hit.passage.citation.label() or "written by the agent"
            self.detail.setHtml(
                f"<b>Score</b> {hit.score:.3f} · <b>Source</b> {escape(source)} · "
                f"<b>Stored</b> {hit.passage.created_at:%Y-%m-%d %H:%M}" + literal(hit.passage.text)
            )
        elif isinstance(hit, Message):
            self.detail.setHtml(f"<b>Conversation</b> · {hit.created_at:%Y-%m-%d %H:%M}" + literal(hit.search_text))

    @Slot()
    @reports_errors
    def on_search_entered(self) -> None:
        query, agent_id = self.search_box.text().strip(), self.agent_id
        if not query or agent_id is None:
            return
        self.jobs.run(
            lambda: self.archival.search(agent_id, query, page_size=20).hits,
            lambda hits: self.show_hits([("archival", h) for h in hits]),
            self.failed.emit,
        )

    # --- browsing --------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def refresh(self) -> None:
        agent_id, archival = self.agent_id, self.archival
        self.reads.load(
            (self, "passages"),
            lambda: archival.list(agent_id, limit=LISTED) if agent_id is not None else [],
            self._show_passages,
            self.failed.emit,
        )

    @reports_errors
    def _show_passages(self, passages: list[Passage]) -> None:
        self.passages = passages
        self.passages_table.setRowCount(len(self.passages))
        for row, passage in enumerate(self.passages):
            values = [str(passage.id), passage.text, passage.citation.label(), f"{passage.created_at:%Y-%m-%d %H:%M}"]
            for column, value in enumerate(values):
                self.passages_table.setItem(row, column, QTableWidgetItem(value.replace("\n", " ")[:300]))
        self.loaded.emit()

    def selected_passages(self) -> list[Passage]:
        return [self.passages[index.row()] for index in self.passages_table.selectionModel().selectedRows()]

    @Slot()
    @reports_errors
    def on_edit_clicked(self) -> None:
        selected = self.selected_passages()
        if len(selected) != 1:
            return
        text, ok = QInputDialog.getMultiLineText(self, "Edit passage", "Passage text:", selected[0].text)
        if ok:
            self.edit_passage(selected[0].id, text)

    def edit_passage(self, passage_id: int, text: str) -> None:
        self.jobs.run(
            lambda: self.archival.update_text(passage_id, text), lambda _r: self._after_change(), self.failed.emit
        )

    @Slot()
    @reports_errors
    def on_delete_clicked(self) -> None:
        selected = self.selected_passages()
        if not selected:
            return
        answer = QMessageBox.question(
            self, "Delete passages", literal(f"Delete {len(selected)} passage(s) from archival memory?")
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.delete_passages([p.id for p in selected])

    def delete_passages(self, passage_ids: list[int]) -> None:
        archival = self.archival
        self.jobs.run(lambda: archival.delete(passage_ids), lambda _r: self._after_change(), self.failed.emit)

    def _after_change(self) -> None:
        self.refresh()
        self.changed.emit()


def _passages_table(columns: list[str]) -> QTableWidget:
    return tables.table(columns, stretch=2 if len(columns) > 3 else 1, wrap=False)
