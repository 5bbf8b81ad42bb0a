"""The Models page: the catalog and the local models (size, RAM, context, licence, checksum, which
one is active), downloads with progress and cancel, and Ollama / LM Studio models on this machine
(model_servers.py).

It only renders and asks: the catalog, downloads and server checks are ``memdesk.core.models``;
switching the running model is the window's job (``choose_requested``), because the agent worker
owns the runtime and keeps the previous model if the new one fails to load.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from memdesk.app.services import Services
from memdesk.core.base.errors import DownloadCancelled
from memdesk.core.models.catalog import CatalogEntry, machine_memory
from memdesk.core.models.download import Downloader, DownloadProgress, DownloadResult, format_bytes
from memdesk.core.models.hub import HubConfig
from memdesk.core.models.library import Choice, ModelRow
from memdesk.core.runtime.base import CancelToken
from memdesk.ui.common import palette
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.common.text import escape, literal, plain_label
from memdesk.ui.dialogs.model_servers import LocalServersBox
from memdesk.ui.workers.jobs import Jobs

COLUMNS = ("Model", "Status", "Size", "RAM*", "Context", "Licence", "Checksum", "Good for")
KIND_TEXT = {"bundled": "Bundled", "downloaded": "Downloaded", "own": "Your file", "available": "Not downloaded"}


class _DownloadRelay(QObject):
    """Carries a download thread's news to the GUI thread (signals are queued across threads)."""

    progressed = Signal(object)
    finished = Signal(object, object)  # (entry, DownloadResult)
    failed = Signal(object, object)  # (entry, exception)


class ModelsPage(QWidget):
    """Signals:
    choose_requested(object): a ``Choice`` the user wants to switch to
    """

    choose_requested = Signal(object)

    def __init__(
        self,
        services: Services,
        jobs: Jobs,
        hub: ErrorHub,
        parent: QWidget | None = None,
        *,
        hub_config: HubConfig | None = None,
    ) -> None:
        super().__init__(parent)
        self.services = services
        self.jobs = jobs
        self.hub = hub
        self.hub_config = hub_config or HubConfig.from_environment()
        self.rows: list[ModelRow] = []
        self.download_entry: CatalogEntry | None = None
        self.last_progress: DownloadProgress | None = None
        self.switching = False
        self._cancel = CancelToken()
        self._thread: threading.Thread | None = None
        self._relay = _DownloadRelay(self)
        self._relay.progressed.connect(self.on_progress)
        self._relay.finished.connect(self.on_download_finished)
        self._relay.failed.connect(self.on_download_failed)
        self._build()
        self.refresh()

    # --- construction ----------------------------------------------------------------------------
    def _build(self) -> None:
        layout = QVBoxLayout(self)
        self.active_label = QLabel()
        self.active_label.setTextFormat(Qt.TextFormat.RichText)  # the model's name is escaped: a server names it
        layout.addWidget(self.active_label)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self.update_buttons)
        self.table.itemDoubleClicked.connect(lambda _item: self.on_use_clicked())
        layout.addWidget(self.table, 1)
        note = QLabel(
            "RAM*: the model file plus its memory for the context window you set "
            f"({self.services.settings.context_size} tokens). "
            "Every figure's source is in the tooltip and in memdesk/resources/catalog.json."
        )
        note.setWordWrap(True)
        note.setStyleSheet(f"color: {palette.muted()}")
        layout.addWidget(note)
        buttons = QHBoxLayout()
        self.download_button = QPushButton("&Download")
        self.use_button = QPushButton("&Use this model")
        self.remove_button = QPushButton("&Remove")
        self.cancel_button = QPushButton("&Cancel download")
        for button, slot in (
            (self.download_button, self.on_download_clicked),
            (self.use_button, self.on_use_clicked),
            (self.remove_button, self.on_remove_clicked),
            (self.cancel_button, self.on_cancel_clicked),
        ):
            button.clicked.connect(slot)
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setVisible(False)
        self.progress_label = plain_label()
        layout.addWidget(self.progress)
        layout.addWidget(self.progress_label)
        self.servers_box = LocalServersBox(self.jobs, self.hub)
        self.servers_box.choose_requested.connect(self.request_switch)
        layout.addWidget(self.servers_box)

    # --- the table -----------------------------------------------------------------------------------
    def refresh(self) -> None:
        settings = self.services.settings
        selected = self.selected_row()
        selected_id = selected.id if selected else None
        self.rows = self.services.models.overview(settings)
        text = f"<b>Active model:</b> {escape(self.services.models.active(settings))}"
        memory = machine_memory()
        pick = self.services.models.catalog.recommended_for_memory(memory)
        if pick is not None and memory:
            text += (
                f" &nbsp;·&nbsp; This computer has {memory / 1024**3:.0f} GB of memory: "
                f"<b>{escape(pick.name)}</b> is the recommended model."
            )
        self.active_label.setText(text)
        self.table.setRowCount(len(self.rows))
        context = settings.context_size
        for index, row in enumerate(self.rows):
            ram = row.ram_estimate(context)
            status = KIND_TEXT[row.kind] + (" · active" if row.active else "")
            if row.entry is not None and row.entry.recommended_for:
                status += " · best for " + " and ".join(t.upper() for t in row.entry.recommended_for)
            if self.download_entry is not None and row.entry is self.download_entry:
                status = "Downloading…"
            cells = (
                row.name,
                status,
                format_bytes(row.size),
                format_bytes(ram) if ram else "?",
                f"{row.context_length:,}" if row.context_length else "?",
                row.licence,
                row.checksum,
                row.entry.good_for if row.entry else "A .gguf file you added",
            )
            tip = self._sources_tip(row)
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(literal(tip))
                if row.active:
                    font = QFont(item.font())
                    font.setBold(True)
                    item.setFont(font)
                self.table.setItem(index, column, item)
            if row.id == selected_id:
                self.table.selectRow(index)
        self.update_buttons()

    @staticmethod
    def _sources_tip(row: ModelRow) -> str:
        if row.entry is None:
            return str(row.local.path) if row.local else ""
        lines = [f"{row.entry.name} ({row.entry.quant}) from {row.entry.repo or row.entry.source}"]
        if row.local is not None:
            lines.append(str(row.local.path))
        lines += [f"{figure}: {source}" for figure, source in row.entry.sources.items()]
        return "\n".join(lines)

    def selected_row(self) -> ModelRow | None:
        indexes = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not indexes or indexes[0].row() >= len(self.rows):
            return None
        return self.rows[indexes[0].row()]

    def select(self, model_id: str) -> None:
        for index, row in enumerate(self.rows):
            if row.id == model_id:
                self.table.selectRow(index)
                return
        raise KeyError(model_id)

    @Slot()
    @reports_errors
    def update_buttons(self) -> None:
        row = self.selected_row()
        downloading = self._thread is not None
        self.download_button.setEnabled(row is not None and row.kind == "available" and not downloading)
        self.use_button.setEnabled(
            row is not None and row.kind != "available" and not row.active and not self.switching
        )
        self.remove_button.setEnabled(row is not None and row.kind in ("downloaded", "own") and not row.active)
        self.cancel_button.setEnabled(downloading)
        self.servers_box.update_buttons(switching=self.switching)

    # --- actions -------------------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_use_clicked(self) -> None:
        row = self.selected_row()
        if row is None or row.kind == "available" or row.active:
            return
        try:
            choice = self.services.models.choose(row.id if row.kind == "bundled" else str(row.local.path))  # type: ignore[union-attr]
        except Exception as error:  # noqa: BLE001
            self.hub.report(error)
            return
        self.request_switch(choice)

    @Slot(object)
    @reports_errors
    def request_switch(self, choice: Choice) -> None:
        self.switching = True
        self.update_buttons()
        self.progress_label.setText(f"Switching to {choice.label}…")
        self.choose_requested.emit(choice)

    def switch_done(self, ok: bool, text: str = "") -> None:
        """The window reports how the switch ended (the previous model stays active on failure)."""
        self.switching = False
        self.progress_label.setText(text)
        self.refresh()

    @Slot()
    @reports_errors
    def on_remove_clicked(self) -> None:
        row = self.selected_row()
        if row is None or row.local is None:
            return
        answer = QMessageBox.question(
            self, "Remove model", literal(f"Delete {row.local.path}?\nThis frees {format_bytes(row.size)}.")
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.remove(row)

    def remove(self, row: ModelRow) -> None:
        try:
            self.services.models.remove(str(row.local.path) if row.local else row.id, self.services.settings)
        except Exception as error:  # noqa: BLE001
            self.hub.report(error)
        self.refresh()

    # --- downloads -----------------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_download_clicked(self) -> None:
        row = self.selected_row()
        if row is not None and row.kind == "available" and row.entry is not None:
            self.start_download(row.entry)

    def start_download(self, entry: CatalogEntry) -> None:
        if self._thread is not None:
            return
        self.download_entry = entry
        self.last_progress = None
        self._cancel = CancelToken()
        self.progress.setValue(0)
        self.progress.setVisible(True)
        self.progress_label.setText(f"Starting the download of {entry.name}…")
        downloader = Downloader(self.services.paths, self.hub_config)
        cancel, relay = self._cancel, self._relay

        def work() -> None:
            try:
                result = downloader.download(entry, on_progress=relay.progressed.emit, cancel=cancel)
            except BaseException as error:  # noqa: BLE001 - reported in the GUI thread
                relay.failed.emit(entry, error)
            else:
                relay.finished.emit(entry, result)

        self._thread = threading.Thread(target=work, name="model-download", daemon=True)
        self._thread.start()
        self.refresh()

    @Slot()
    @reports_errors
    def on_cancel_clicked(self) -> None:
        self._cancel.cancel()
        self.progress_label.setText("Stopping…")

    @Slot(object)
    @reports_errors
    def on_progress(self, progress: DownloadProgress) -> None:
        self.last_progress = progress
        self.progress.setValue(int(progress.fraction * 1000))
        name = self.download_entry.name if self.download_entry else progress.file
        self.progress_label.setText(f"{name}: {progress.describe()}")

    @Slot(object, object)
    @reports_errors
    def on_download_finished(self, entry: CatalogEntry, result: DownloadResult) -> None:
        self._download_ended()
        try:
            local = self.services.models.record_download(entry, result)
        except Exception as error:  # noqa: BLE001
            self.hub.report(error)
            return
        self.progress_label.setText(
            f"{entry.name} is installed ({format_bytes(local.size)}, sha256 verified). Select it and press Use."
        )
        self.refresh()
        self.select(entry.id)

    @Slot(object, object)
    @reports_errors
    def on_download_failed(self, entry: CatalogEntry, error: BaseException) -> None:
        self._download_ended()
        if isinstance(error, DownloadCancelled):
            self.progress_label.setText(error.user_message)
        else:
            self.progress_label.setText(f"{entry.name} was not installed.")
            self.hub.report(error)
        self.refresh()

    def _download_ended(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._thread = None
        self.download_entry = None
        self.progress.setVisible(False)

    @property
    def downloading(self) -> bool:
        return self._thread is not None

    def shutdown(self) -> None:
        """Stop a download in progress (what arrived is kept to resume)."""
        if self._thread is not None:
            self._cancel.cancel()
            self._thread.join(timeout=10)


class ModelsDialog(QDialog):
    """The Models page in its own window (File > Models…)."""

    def __init__(self, page: ModelsPage, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Models")
        self.resize(1100, 640)
        self.page = page
        layout = QVBoxLayout(self)
        layout.addWidget(page)
