"""Documents: a drop zone and file pickers feeding a background ingestion thread, and the list of
documents with per-file progress through reading and embedding, failure reasons, remove and
re-ingest. Ingestion has its own thread and store connection, so typing never waits for it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot
from PySide6.QtGui import QDragEnterEvent, QDropEvent
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

from desktop.app import Services
from desktop.core.runtime.base import CancelToken
from desktop.errors import GenerationCancelled
from desktop.ui import documents_adapter as docs


class IngestWorker(QObject):
    """Lives in its own thread; files are ingested one after another.

    Signals:
        progress(object): a documents_adapter.Progress
        idle(): the queue is empty
        failed(object): an unexpected error
    """

    progress = Signal(object)
    idle = Signal()
    failed = Signal(object)

    def __init__(self, open_services: Callable[[], Services]) -> None:
        super().__init__()
        self._open_services = open_services
        self._services: Services | None = None
        self.cancel = CancelToken()

    @Slot(int, list)
    def ingest(self, agent_id: int, paths: list) -> None:
        try:
            if self._services is None:
                self._services = self._open_services()
            for path in docs.expand(Path(p) for p in paths):
                docs.ingest(self._services, agent_id, path, self.progress.emit, self.cancel)
        except GenerationCancelled:
            pass  # the window is closing; the next start resumes the unembedded passages
        except Exception as error:  # noqa: BLE001 - reported on the message bar
            self.failed.emit(error)
        self.idle.emit()

    @Slot()
    def shutdown(self) -> None:
        if self._services is not None:
            self._services.close()
            self._services = None
        QThread.currentThread().quit()


class DropZone(QLabel):
    """Signals: dropped(list[str])"""

    dropped = Signal(list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Drop files or folders here\n(or anywhere on the window)", parent)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setMinimumHeight(60)
        self.setStyleSheet("border: 2px dashed #aaa; border-radius: 6px; color: #777")
        self.setAcceptDrops(True)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt API
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt API
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            self.dropped.emit(paths)
            event.acceptProposedAction()


class DocumentsPanel(QWidget):
    """Signals:
    ingest_requested(int, list): agent id and paths, for the ingestion thread
    changed(): documents were added or removed (archival memory changed)
    """

    ingest_requested = Signal(int, list)
    changed = Signal()

    def __init__(self, services: Services, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.services = services
        self.agent_id: int | None = None
        self.live: dict[str, docs.Progress] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.drop_zone = DropZone()
        layout.addWidget(self.drop_zone)
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
        self.rows: list[docs.DocumentRow] = []
        self._connect_signals()

    def _connect_signals(self) -> None:
        self.drop_zone.dropped.connect(self.add_paths)
        self.add_files_button.clicked.connect(self.on_add_files_clicked)
        self.add_folder_button.clicked.connect(self.on_add_folder_clicked)
        self.reingest_button.clicked.connect(self.on_reingest_clicked)
        self.remove_button.clicked.connect(self.on_remove_clicked)

    def set_agent(self, agent_id: int | None) -> None:
        self.agent_id = agent_id
        self.live.clear()
        self.refresh()

    @Slot(list)
    def add_paths(self, paths: list[str]) -> None:
        if self.agent_id is None or not paths:
            return
        self.ingest_requested.emit(self.agent_id, [str(p) for p in paths])

    @Slot()
    def on_add_files_clicked(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Add documents")
        self.add_paths(files)

    @Slot()
    def on_add_folder_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of documents")
        if folder:
            self.add_paths([folder])

    def selected(self) -> list[docs.DocumentRow]:
        return [self.rows[i.row()] for i in self.table.selectionModel().selectedRows()]

    @Slot()
    def on_reingest_clicked(self) -> None:
        selected = self.selected()
        for row in selected:
            docs.remove_document(self.services, row.id)
        self.refresh()
        self.add_paths([row.path for row in selected])

    @Slot()
    def on_remove_clicked(self) -> None:
        for row in self.selected():
            docs.remove_document(self.services, row.id)
        self.refresh()
        self.changed.emit()

    @Slot(object)
    def on_progress(self, progress: docs.Progress) -> None:
        self.live[progress.path] = progress
        if progress.stage in ("done", "failed") or progress.done in (0, progress.total) or progress.done % 256 == 0:
            self.refresh()
        else:
            self._update_bars()
        if progress.stage == "done":
            self.changed.emit()

    @Slot()
    def refresh(self) -> None:
        self.rows = docs.list_documents(self.services, self.agent_id) if self.agent_id is not None else []
        known = {row.path for row in self.rows}
        pending = [p for p in self.live.values() if p.path not in known and p.stage == "reading"]
        self.table.setRowCount(len(self.rows) + len(pending))
        for index, row in enumerate(self.rows):
            self.table.setItem(index, 0, QTableWidgetItem(row.title))
            self.table.item(index, 0).setToolTip(row.path)
            bar = QProgressBar()
            bar.setRange(0, max(row.chunk_count, 1))
            bar.setValue(row.embedded if row.status != "done" else max(row.chunk_count, 1))
            bar.setFormat("%v / %m passages embedded")
            self.table.setCellWidget(index, 1, bar)
            status = QTableWidgetItem(row.status if row.status != "failed" else f"failed: {row.error}")
            if row.status == "failed":
                status.setForeground(Qt.GlobalColor.red)
                status.setToolTip(row.error or "")
            self.table.setItem(index, 2, status)
        for offset, progress in enumerate(pending):
            index = len(self.rows) + offset
            self.table.setItem(index, 0, QTableWidgetItem(Path(progress.path).name))
            bar = QProgressBar()
            bar.setRange(0, 0)  # busy: reading has no count yet
            self.table.setCellWidget(index, 1, bar)
            self.table.setItem(index, 2, QTableWidgetItem("reading"))

    def _update_bars(self) -> None:
        for index, row in enumerate(self.rows):
            progress = self.live.get(row.path)
            bar = self.table.cellWidget(index, 1)
            if progress is not None and progress.stage == "embedding" and isinstance(bar, QProgressBar):
                bar.setRange(0, max(progress.total, 1))
                bar.setValue(progress.done)
                self.table.item(index, 2).setText("embedding")
