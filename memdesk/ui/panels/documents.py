"""Documents: a drop zone and file pickers feeding the ingestion pipeline, and the list of
documents with per-file progress through reading and embedding, failure reasons, remove and
re-ingest. The requests run on the ingestion thread (memdesk.ui.workers.ingest) with its own
store connection; this panel only reads the store, off the GUI thread (memdesk.ui.workers.reads;
WAL readers never wait for the writer), so typing never waits for ingestion.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtGui import QColor, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.documents import catalog
from memdesk.core.documents.catalog import DocumentRow
from memdesk.core.documents.progress import FileFailure, IngestProgress, IngestReport
from memdesk.core.storage.database import Database
from memdesk.ui.common import palette
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import literal, plain_label
from memdesk.ui.workers.reads import Reads

#: Progress arrives per file and per embedding batch; the table is rebuilt at most this often.
REFRESH_MS = 150


class DropZone(QLabel):
    """Signals: dropped(list[str])"""

    dropped = Signal(list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Drop files or folders here\n(or anywhere on the window)", parent)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setMinimumHeight(60)
        self.setStyleSheet(f"border: 2px dashed {palette.faint()}; border-radius: 6px; color: {palette.muted()}")
        self.setAcceptDrops(True)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt API
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt API
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            self.dropped.emit(paths)
            event.acceptProposedAction()


def _key(path: str | None) -> str | None:
    # The ingestor reports the path as given while reading and stores it absolute.
    return None if path is None else str(Path(path).absolute())


class DocumentsPanel(QWidget):
    """Signals (requests for the ingestion thread, which runs them in order):
    ingest_requested(int, list): agent id and paths
    remove_requested(int, list): agent id and document ids
    reingest_requested(int, list): agent id and document ids
    pick_requested(int, int, str): agent id, a document id and the file the user picked for it
    changed(): documents were added or removed (archival memory changed)
    loaded(): the documents read last are shown
    """

    ingest_requested = Signal(int, list)
    remove_requested = Signal(int, list)
    reingest_requested = Signal(int, list)
    pick_requested = Signal(int, int, str)
    changed = Signal()
    loaded = Signal()

    def __init__(self, db: Database, reads: Reads, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.db = db
        self.reads = reads
        self.agent_id: int | None = None
        self.current: IngestProgress | None = None
        self.batches = 0  # requested and not yet finished
        self.last_report: IngestReport | None = None
        self.unlisted: list[FileFailure] = []  # failures with no document row (e.g. a vanished path)
        self._failures_to_place: list[FileFailure] | None = None  # a finished batch's, until rows are read
        self.removing: set[int] = set()
        self.rows: list[DocumentRow] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.drop_zone = DropZone()
        layout.addWidget(self.drop_zone)
        self.summary = plain_label()
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["Document", "Progress", "Status"])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        layout.addWidget(self.table, 1)
        row = QHBoxLayout()
        self.add_files_button = QPushButton("Add files…")
        self.add_folder_button = QPushButton("Add folder…")
        self.reingest_button = QPushButton("Re-ingest")
        self.remove_button = QPushButton("Remove")
        for button in (self.add_files_button, self.add_folder_button, self.reingest_button, self.remove_button):
            row.addWidget(button)
        layout.addLayout(row)
        self.refresh_timer = QTimer(self)
        self.refresh_timer.setSingleShot(True)
        self.refresh_timer.setInterval(REFRESH_MS)
        self._connect_signals()

    def _connect_signals(self) -> None:
        self.drop_zone.dropped.connect(self.add_paths)
        self.add_files_button.clicked.connect(self.on_add_files_clicked)
        self.add_folder_button.clicked.connect(self.on_add_folder_clicked)
        self.reingest_button.clicked.connect(self.on_reingest_clicked)
        self.remove_button.clicked.connect(self.on_remove_clicked)
        self.refresh_timer.timeout.connect(self.refresh)

    def set_agent(self, agent_id: int | None) -> None:
        self.agent_id = agent_id
        self.current = None
        self.unlisted = []
        self._failures_to_place = None
        self.removing.clear()
        self.refresh()
        if agent_id is not None:
            db = self.db
            self.reads.load((self, "unfinished"), lambda: catalog.has_unfinished(db, agent_id), self._finish_unfinished)

    @reports_errors
    def _finish_unfinished(self, unfinished: bool) -> None:
        if unfinished and self.agent_id is not None:
            self._request(self.ingest_requested, [])  # finish what a closed or killed app left

    # --- requests ----------------------------------------------------------------------------
    def _request(self, signal, items: list) -> None:
        self.batches += 1
        signal.emit(self.agent_id, items)
        self._show_summary()

    @Slot(list)
    @reports_errors
    def add_paths(self, paths: list[str]) -> None:
        if self.agent_id is None or not paths:
            return
        self._request(self.ingest_requested, [str(p) for p in paths])

    @Slot()
    @reports_errors
    def on_add_files_clicked(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Add documents")
        self.add_paths(files)

    @Slot()
    @reports_errors
    def on_add_folder_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of documents")
        if folder:
            self.add_paths([folder])

    def selected(self) -> list[DocumentRow]:
        return [self.rows[i.row()] for i in self.table.selectionModel().selectedRows() if i.row() < len(self.rows)]

    @Slot()
    @reports_errors
    def on_reingest_clicked(self) -> None:
        """A document from an agent file is read only from a file the user picks now: its
        recorded path was the file's author's choice, and may name anything on this machine."""
        rows = self.selected()
        if not rows or self.agent_id is None:
            return
        ids = [row.id for row in rows if not row.from_agent_file]
        if ids:
            self._request(self.reingest_requested, ids)
        for row in rows:
            if row.from_agent_file:
                path, _ = QFileDialog.getOpenFileName(
                    self, f"Pick the file for {row.title!r} (it came with an imported agent file)"
                )
                if path:
                    self.batches += 1
                    self.pick_requested.emit(self.agent_id, row.id, path)
                    self._show_summary()

    @Slot()
    @reports_errors
    def on_remove_clicked(self) -> None:
        ids = [row.id for row in self.selected()]
        if ids and self.agent_id is not None:
            self.removing.update(ids)
            self.remove_requested.emit(self.agent_id, ids)
            self.refresh()

    # --- from the ingestion thread -----------------------------------------------------------
    @Slot(object)
    @reports_errors
    def on_progress(self, event: IngestProgress) -> None:
        self.current = event
        self._show_summary()
        if not self.refresh_timer.isActive():
            self.refresh_timer.start()

    @Slot(object)
    @reports_errors
    def on_finished(self, report: IngestReport) -> None:
        self.batches = max(0, self.batches - 1)
        self.current = None
        self.last_report = report
        self._failures_to_place = list(report.failures or [])  # those without a row are listed apart
        self.refresh()
        self.changed.emit()

    @Slot()
    @reports_errors
    def on_removed(self) -> None:
        self.removing.clear()
        self.refresh()
        self.changed.emit()

    # --- painting ----------------------------------------------------------------------------
    def _show_summary(self) -> None:
        event = self.current
        if event is not None and event.phase in ("reading", "embedding"):
            eta = f", about {event.eta_seconds:.0f} s left" if event.eta_seconds else ""
            if event.phase == "reading":
                name = f": {Path(event.current_file).name}" if event.current_file else ""
                text = f"Reading file {min(event.done + 1, event.total)} of {event.total}{eta}{name}"
            else:
                text = f"Embedding passages: {event.done} of {event.total}{eta}"
            if event.failed:
                text += f" — {event.failed} failed"
        elif self.batches:
            text = "Waiting to start…"
        elif self.last_report is not None:
            r = self.last_report
            failed = len(r.failures or [])
            text = f"Last batch: {r.added} added, {r.replaced} replaced, {r.unchanged} unchanged, {failed} failed"
            if r.cancelled:
                text += " (stopped; adding them again finishes the rest)"
        else:
            text = ""
        self.summary.setText(text)

    @Slot()
    @reports_errors
    def refresh(self) -> None:
        self.refresh_timer.stop()
        self._show_summary()
        agent_id, db = self.agent_id, self.db
        self.reads.load(
            (self, "documents"),
            lambda: catalog.list_documents(db, agent_id) if agent_id is not None else [],
            self._show_rows,
        )

    @reports_errors
    def _show_rows(self, rows: list[DocumentRow]) -> None:
        self.rows = rows
        known = {row.path for row in self.rows}
        if self._failures_to_place is not None:
            self.unlisted = [f for f in self._failures_to_place if _key(f.path) not in known]
            self._failures_to_place = None
        event = self.current
        current = _key(event.current_file) if event is not None else None
        reading_new = event is not None and event.phase == "reading" and current is not None and current not in known
        count = len(self.rows) + len(self.unlisted) + (1 if reading_new else 0)
        self.table.setRowCount(count)
        for index, row in enumerate(self.rows):
            reading = event is not None and event.phase == "reading" and row.path == current
            embedding = event is not None and event.phase == "embedding" and row.path == current
            if row.id in self.removing:
                status, failed = "removing…", False
            elif reading:
                status, failed = "reading", False
            elif row.status == "failed":
                status, failed = f"failed: {row.error}", True
            elif row.status == "embedding":
                status, failed = ("embedding" if embedding or self.batches == 0 else "waiting to embed"), False
            elif row.error:
                status, failed = f"done; the last re-read failed: {row.error}", True
            elif row.from_agent_file:
                status, failed = f"{row.status}; from an agent file (Re-ingest asks for the file)", False
            else:
                status, failed = row.status, False
            total = max(row.chunk_count, 1)
            value = total if row.status == "done" else row.embedded
            self._set_row(index, row.title, row.path, status, failed, (0, 0) if reading else (total, value))
        offset = len(self.rows)
        for failure in self.unlisted:
            self._set_row(offset, Path(failure.path).name, failure.path, f"failed: {failure.reason}", True, (1, 0))
            offset += 1
        if reading_new and current is not None:
            self._set_row(offset, Path(current).name, current, "reading", False, (0, 0))
        self.loaded.emit()

    def _set_row(self, index: int, title: str, path: str, status: str, failed: bool, progress: tuple[int, int]) -> None:
        name = QTableWidgetItem(title)
        name.setToolTip(literal(path))
        self.table.setItem(index, 0, name)
        bar = self.table.cellWidget(index, 1)
        if not isinstance(bar, QProgressBar):
            bar = QProgressBar()
            self.table.setCellWidget(index, 1, bar)
        maximum, value = progress
        bar.setRange(0, maximum)  # (0, 0) is Qt's busy bar: reading has no count yet
        bar.setValue(value)
        bar.setFormat("%v / %m passages embedded")
        item = QTableWidgetItem(status)
        if failed:
            item.setForeground(QColor(palette.readable(palette.RED)))
            item.setToolTip(literal(status))
        self.table.setItem(index, 2, item)
