"""File > Devices…: one memory on several devices (memdesk.core.sync) in the window.

The dialog starts a sync folder (and shows the pairing code to type on the other device, and as a
QR code to scan) or joins one with a code, lists the paired devices with their last sync, what
they sent that waits and why, lists the conflicts a merge kept for the user, removes a device and
stops syncing here. The
controller syncs on a timer (the ``sync_interval_s`` setting) and on Sync now, always on the job
pool and a connection of its own, so applying thousands of changes never holds the GUI thread or
the connection the panels read through; when changes arrived it says so (``synced``) and the
window shows them without a restart.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QMessageBox,
    QPushButton,
    QStatusBar,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from memdesk.app.operations import open_sync
from memdesk.app.services import Services
from memdesk.core.base.errors import MemDeskError
from memdesk.core.base.settings_table import Settings
from memdesk.core.storage import open_database
from memdesk.core.sync import setup
from memdesk.core.sync.engine import SyncReport, device_name
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.common.text import literal, plain_label
from memdesk.ui.dialogs.pairing_qr import PairingQr
from memdesk.ui.workers.jobs import Jobs

DEVICE_COLUMNS = ("Device", "Last sync", "Files applied", "Waiting", "Why it waits")
CONFLICT_COLUMNS = ("Agent", "Block", "What happened", "When")


def _item(text: object) -> QTableWidgetItem:
    item = QTableWidgetItem(str(text))
    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
    return item


class DevicesDialog(QDialog):
    """This device, the others, conflicts. Asks the controller for everything that touches the
    store or the folder; shows what comes back.

    Signals:
        sync_requested(): Sync now
    """

    sync_requested = Signal()

    def __init__(self, controller: SyncController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.setWindowTitle("Devices")
        self.resize(760, 520)
        layout = QVBoxLayout(self)
        self.summary = plain_label("Reading…")
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        # the code to type, and beside it the same code to scan
        code_row = QHBoxLayout()
        self.code_qr = PairingQr()
        code_row.addWidget(self.code_qr)
        self.code_label = plain_label("")
        self.code_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.code_label.setWordWrap(True)
        self.code_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.code_label.setVisible(False)
        code_row.addWidget(self.code_label, 1)
        layout.addLayout(code_row)
        setup_row = QHBoxLayout()
        self.start_button = QPushButton("&Start a sync folder…")
        self.join_button = QPushButton("&Join a sync folder…")
        self.sync_button = QPushButton("Sync &now")
        for button in (self.start_button, self.join_button, self.sync_button):
            setup_row.addWidget(button)
        setup_row.addStretch(1)
        layout.addLayout(setup_row)
        layout.addWidget(QLabel("Paired devices"))
        self.devices = QTableWidget(0, len(DEVICE_COLUMNS))
        self.devices.setHorizontalHeaderLabels(DEVICE_COLUMNS)
        self.devices.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.devices.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.devices.verticalHeader().setVisible(False)
        self.devices.horizontalHeader().setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        layout.addWidget(self.devices, 1)
        self.no_devices = plain_label("No other device yet: join this folder from another one with the pairing code.")
        layout.addWidget(self.no_devices)
        layout.addWidget(QLabel("Conflicts (both versions are kept in the block; edit the block to resolve one)"))
        self.conflicts = QTableWidget(0, len(CONFLICT_COLUMNS))
        self.conflicts.setHorizontalHeaderLabels(CONFLICT_COLUMNS)
        self.conflicts.verticalHeader().setVisible(False)
        self.conflicts.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        layout.addWidget(self.conflicts, 1)
        bottom = QHBoxLayout()
        self.remove_button = QPushButton("&Remove device…")
        self.leave_button = QPushButton("Stop syncing &here…")
        self.close_button = QPushButton("Close")
        bottom.addWidget(self.remove_button)
        bottom.addWidget(self.leave_button)
        bottom.addStretch(1)
        bottom.addWidget(self.close_button)
        layout.addLayout(bottom)
        self.status: dict[str, Any] = {}
        self.start_button.clicked.connect(self.on_start_clicked)
        self.join_button.clicked.connect(self.on_join_clicked)
        self.sync_button.clicked.connect(self.sync_requested)
        self.remove_button.clicked.connect(self.on_remove_clicked)
        self.leave_button.clicked.connect(self.on_leave_clicked)
        self.close_button.clicked.connect(self.close)
        self.show_status({"syncing": False})

    # --- what the store says -----------------------------------------------------------------
    def show_status(self, status: dict[str, Any]) -> None:
        self.status = status
        syncing = bool(status.get("syncing"))
        for button in (self.start_button, self.join_button):
            button.setVisible(not syncing)
        for button in (self.sync_button, self.remove_button, self.leave_button):
            button.setEnabled(syncing)
        if not syncing:
            self.summary.setText(
                "This device does not sync. Start a sync folder here (a folder Syncthing, a cloud drive or a USB "
                "stick carries to your other devices), or join one another device started, with its pairing code."
            )
        else:
            reach = "" if status["folder_reachable"] else " It is not reachable now: changes wait here."
            waiting = status["waiting_changes"]
            self.summary.setText(
                f"{status['device']['name']} syncs through {status['folder']}.{reach}"
                f" {status['sent']} change files sent; {waiting} change(s) wait for the next sync."
            )
        rows = status.get("devices", [])
        self.devices.setRowCount(len(rows))
        for row, device in enumerate(rows):
            waiting = max(0, (device["available"] or 0) - device["applied"])
            problem = "removed" if device["removed"] else device["problem"]
            values = (
                device["name"] or device["id"][:8],
                device["last_sync"] or "never",
                device["applied"],
                waiting,
                problem,
            )
            for column, value in enumerate(values):
                self.devices.setItem(row, column, _item(value))
        self.no_devices.setVisible(syncing and not rows)
        conflicts = status.get("conflicts", [])
        self.conflicts.setRowCount(len(conflicts))
        for row, conflict in enumerate(conflicts):
            shown = (conflict["agent"], conflict["label"], conflict["reason"], conflict["at"])
            for column, value in enumerate(shown):
                self.conflicts.setItem(row, column, _item(value))

    def show_code(self, code: str) -> None:
        self.code_label.setText(
            f"Pairing code: {code}\nType it on your other device (File > Devices… > Join, or memdesk sync join"
            " FOLDER --code CODE), or scan the QR code. It is shown once and stored nowhere: whoever has it and"
            " the folder can read this memory."
        )
        self.code_label.setVisible(True)
        self.code_qr.show_code(code)

    # --- what the user asks --------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_start_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Folder your devices share (Syncthing, a cloud drive…)")
        if folder:
            self.controller.start_folder(Path(folder) / "MemDesk sync")

    @Slot()
    @reports_errors
    def on_join_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "The sync folder another device started")
        if not folder:
            return
        code, ok = QInputDialog.getText(self, "Pairing code", "The code the other device showed:")
        if ok and code.strip():
            self.controller.join_folder(Path(folder), code.strip())

    @Slot()
    @reports_errors
    def on_remove_clicked(self) -> None:
        row = self.devices.currentRow()
        rows = self.status.get("devices", [])
        if row < 0 or row >= len(rows):
            self.summary.setText("Select the device to remove first.")
            return
        device = rows[row]
        name = device["name"] or device["id"][:8]
        # the name is the one that device announced: shown as text, never as markup
        question = (
            f"Remove {name}? Its key is revoked: it reads nothing written from now on, the files it writes are"
            " refused, and a new pairing code replaces this one. What it sent stays."
        )
        answer = QMessageBox.question(self, "Remove device", literal(question))
        if answer == QMessageBox.StandardButton.Yes:
            self.controller.remove_device(device["id"])

    @Slot()
    @reports_errors
    def on_leave_clicked(self) -> None:
        answer = QMessageBox.question(
            self, "Stop syncing", "Stop syncing on this device? Its memory stays as it is; the others keep syncing."
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.controller.leave()


class SyncController(QObject):
    """File > Devices… (``action``) and syncing while the window is open.

    Signals:
        synced(object): a SyncReport of an exchange that applied something (or refused a file)
    """

    synced = Signal(object)

    def __init__(self, services: Services, jobs: Jobs, hub: ErrorHub, status: QStatusBar, window: QWidget) -> None:
        super().__init__(window)
        self.services, self.jobs, self.hub, self.status_bar, self.window = services, jobs, hub, status, window
        self.dialog: DevicesDialog | None = None
        self.running = False
        self.again = False
        self.closed = False
        self.action = QAction("&Devices…", window)
        self.action.setShortcut(QKeySequence("Ctrl+Shift+D"))
        self.action.triggered.connect(self.open_dialog)
        self.timer = QTimer(self)
        self.timer.timeout.connect(lambda: self.sync_now(quiet=True))

    def _on_own_connection(self, work: Callable[[Any], Any]) -> Any:
        """Run on the job pool: sync writes through a connection of its own, never the panels'."""
        db = open_database(self.services.paths.database, key=self.services.key)
        try:
            return work(db)
        finally:
            db.close()

    def _run(self, work: Callable[[Any], Any], done: Callable[[Any], None]) -> None:
        def finished(result: Any) -> None:
            if not self.closed:
                done(result)
                self.refresh()

        def failed(error: BaseException) -> None:
            self.running = False
            if not self.closed:
                self.hub.report(error)
                self.refresh()

        self.jobs.run(lambda: self._on_own_connection(work), finished, failed)

    # --- the timer -----------------------------------------------------------------------------
    def start(self, settings: Settings) -> None:
        """When the window is up: sync now if paired, then every ``sync_interval_s`` seconds.
        ``settings`` were read off the GUI thread with the agent to show: the GUI thread reads
        nothing from the store (ui/workers/reads.py)."""
        interval = int(settings.sync_interval_s)
        if interval > 0:
            self.timer.start(interval * 1000)
        self.sync_now(quiet=True)

    def close(self) -> None:
        self.closed = True
        self.timer.stop()

    @Slot()
    @reports_errors
    def sync_now(self, quiet: bool = False) -> None:
        if self.closed:
            return
        if self.running:  # once more when this one ends: what was asked for may have come after it read
            self.again = self.again or not quiet
            return
        services = self.services

        def exchange(db: Any) -> SyncReport | None:
            engine = open_sync(services, db=db)
            return engine.now() if engine.enabled else None

        self.running = True

        def done(report: SyncReport | None) -> None:
            self.running = False
            if self.again:
                self.again = False
                QTimer.singleShot(0, self.sync_now)
            if report is None:
                if not quiet:
                    self.status_bar.showMessage("This device does not sync yet: File > Devices…", 5000)
                return
            received = sum(report.received.values())
            if received or not quiet:
                self.status_bar.showMessage(f"Synced: {received} file(s) from other devices", 5000)
            for problem in report.problems:
                self.hub.notify(f"Sync refused a file: {problem}")
            if received or report.problems:
                self.synced.emit(report)

        self._run(exchange, done)

    # --- setting up ------------------------------------------------------------------------------
    def start_folder(self, folder: Path) -> None:
        services = self.services

        def start(db: Any) -> str:
            return setup.start(db, services.clock, folder, device_name())

        def done(code: str) -> None:
            if self.dialog is not None:
                self.dialog.show_code(code)
            self.sync_now(quiet=True)

        self._run(start, done)

    def join_folder(self, folder: Path, code: str) -> None:
        services = self.services

        def join(db: Any) -> None:
            setup.join(db, services.clock, folder, code, device_name())

        self._run(join, lambda _none: self.sync_now())

    def remove_device(self, device_id: str) -> None:
        services = self.services

        def done(removed: setup.Removed) -> None:
            missed = f" {', '.join(removed.missed)} must pair again with it." if removed.missed else ""
            self.hub.notify(f"Removed {removed.name}: its key is revoked.{missed}")
            if self.dialog is not None:
                self.dialog.show_code(removed.code)  # the old code pairs no device any more

        self._run(lambda db: setup.remove_device(db, services.clock, device_id), done)

    def leave(self) -> None:
        self._run(setup.leave, lambda _none: self.status_bar.showMessage("This device no longer syncs", 5000))

    # --- the dialog ------------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def open_dialog(self) -> DevicesDialog:
        if self.dialog is None:
            self.dialog = DevicesDialog(self, self.window)
            self.dialog.sync_requested.connect(self.sync_now)
        self.refresh()
        self.dialog.show()
        self.dialog.raise_()
        return self.dialog

    def refresh(self) -> None:
        """The dialog shows the store's sync state again (read on the job pool)."""
        if self.dialog is None or self.closed:
            return
        dialog = self.dialog

        def failed(error: BaseException) -> None:
            if isinstance(error, MemDeskError):
                self.hub.report(error)

        self.jobs.run(lambda: self._on_own_connection(setup.status), dialog.show_status, failed)
