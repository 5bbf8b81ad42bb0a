"""File > Backups…: the store's snapshots (memdesk/core/storage/backup.py) in the window.

The dialog lists them (date, size, why taken, verified), takes one now on the job pool with a
progress bar (the window stays usable), checks and removes them, opens their folder and chooses
it. Restoring one needs the store closed, so the window closes, ``main.py`` restores and opens a
new window on the restored store (``restore_snapshot`` below, also used for the offer at start).
The controller also takes the daily snapshot: when the window opens, and on a timer while it
stays open across midnight.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer, QUrl, Signal, Slot
from PySide6.QtGui import QAction, QDesktopServices
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QProgressBar,
    QProgressDialog,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from memdesk.app.services import Services, daily_snapshots
from memdesk.core.storage.backup import KEPT, Backups, Snapshot
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.common.text import literal, plain_label
from memdesk.ui.workers.jobs import Jobs

#: How often the open window asks whether the day's snapshot is due (a new day has begun).
DAILY_CHECK_MS = 60 * 60 * 1000

COLUMNS = ("Date", "Size", "Why it was taken", "State")


def describe_size(size: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size} GB"


def describe_when(snapshot: Snapshot) -> str:
    return snapshot.created_at.strftime("%Y-%m-%d %H:%M")


class _Progress(QObject):
    """Carries a job thread's progress to the GUI thread (queued through this object's signal)."""

    changed = Signal(int, int)


class BackupsDialog(QDialog):
    """The snapshots of the store.

    Signals:
        restore_requested(str): the id of the snapshot the user confirmed restoring
    """

    restore_requested = Signal(str)

    def __init__(self, services: Services, jobs: Jobs, hub: ErrorHub, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        #: The foreign snapshot whose differences the user saw and accepted (restore_requested follows).
        self.foreign_accepted: str | None = None
        self.services = services
        self.jobs = jobs
        self.hub = hub
        self.creating = False
        self.setWindowTitle("Backups")
        self.resize(720, 440)
        layout = QVBoxLayout(self)
        intro = QLabel(
            "MemDesk snapshots its store every day and before a migration, an agent import, applying "
            "consolidation and a model switch. Snapshots you take here are kept until you remove them."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        folder_row = QHBoxLayout()
        self.folder_label = plain_label("")
        self.folder_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.choose_folder_button = QPushButton("&Change folder…")
        self.default_folder_button = QPushButton("Use the &default folder")
        self.open_folder_button = QPushButton("&Open folder")
        folder_row.addWidget(self.folder_label, 1)
        for button in (self.choose_folder_button, self.default_folder_button, self.open_folder_button):
            folder_row.addWidget(button)
        layout.addLayout(folder_row)
        self.encryption_label = QLabel("")
        self.encryption_label.setWordWrap(True)
        layout.addWidget(self.encryption_label)
        self.empty_label = QLabel("No snapshots yet. The first one is taken today; Create now takes one at once.")
        self.empty_label.setWordWrap(True)
        layout.addWidget(self.empty_label)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        layout.addWidget(self.table, 1)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        layout.addWidget(self.progress)
        self.status = plain_label("")
        layout.addWidget(self.status)
        buttons = QHBoxLayout()
        self.create_button = QPushButton("Create &now")
        self.restore_button = QPushButton("&Restore…")
        self.verify_button = QPushButton("&Verify")
        self.remove_button = QPushButton("Re&move…")
        close = QPushButton("Close")
        for button in (self.create_button, self.restore_button, self.verify_button, self.remove_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout.addLayout(buttons)
        self._progress = _Progress(self)
        self._progress.changed.connect(self.on_progress)
        self.create_button.clicked.connect(self.on_create_clicked)
        self.restore_button.clicked.connect(self.on_restore_clicked)
        self.verify_button.clicked.connect(self.on_verify_clicked)
        self.remove_button.clicked.connect(self.on_remove_clicked)
        self.open_folder_button.clicked.connect(self.on_open_folder_clicked)
        self.choose_folder_button.clicked.connect(self.on_choose_folder_clicked)
        self.default_folder_button.clicked.connect(self.on_default_folder_clicked)
        self.table.itemSelectionChanged.connect(self.update_buttons)
        close.clicked.connect(self.close)
        self.snapshots: list[Snapshot] = []
        self.refresh()

    @property
    def backups(self) -> Backups:
        return self.services.backups

    # --- the list ------------------------------------------------------------------------------
    @reports_errors
    def refresh(self) -> None:
        backups = self.backups
        self.folder_label.setText(f"Folder: {backups.folder}")
        self.encryption_label.setText(
            "New snapshots are encrypted with the store's passphrase, like the store."
            if backups.key is not None
            else "Snapshots are not encrypted (nor is the store): anyone who can read this folder can read them."
        )
        self.default_folder_button.setEnabled(bool(self.services.settings.backup_folder))
        self.snapshots = backups.list()
        self.table.setRowCount(len(self.snapshots))
        for row, snapshot in enumerate(self.snapshots):
            why = snapshot.reason + (" (kept until you remove it)" if snapshot.kind == KEPT and snapshot.own else "")
            cells = (
                describe_when(snapshot),
                describe_size(snapshot.size),
                why,
                snapshot.describe_state(store_encrypted=backups.key is not None),
            )
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, snapshot.id)
                self.table.setItem(row, column, item)
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.empty_label.setVisible(not self.snapshots)
        self.table.setVisible(bool(self.snapshots))
        self.update_buttons()

    def selected(self) -> Snapshot | None:
        rows = self.table.selectionModel().selectedRows()
        return self.snapshots[rows[0].row()] if rows else None

    def select(self, snapshot_id: str) -> None:
        for row, snapshot in enumerate(self.snapshots):
            if snapshot.id == snapshot_id:
                self.table.selectRow(row)

    @Slot()
    @reports_errors
    def update_buttons(self) -> None:
        chosen = self.selected()
        self.create_button.setEnabled(not self.creating)
        for button in (self.restore_button, self.verify_button, self.remove_button):
            button.setEnabled(chosen is not None and not self.creating)

    # --- actions -------------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_create_clicked(self) -> None:
        backups, relay = self.backups, self._progress
        self.creating = True
        self.progress.setRange(0, 0)
        self.progress.setVisible(True)
        self.status.setText("Taking a snapshot…")
        self.update_buttons()
        self.jobs.run(
            lambda: backups.create("manual", keep=True, progress=relay.changed.emit),
            self.on_created,
            self.on_create_failed,
        )

    @Slot(int, int)
    @reports_errors
    def on_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)

    def _finish_creating(self) -> None:
        self.creating = False
        self.progress.setVisible(False)

    @reports_errors
    def on_created(self, snapshot: Snapshot) -> None:
        self._finish_creating()
        self.status.setText(
            f"Snapshot of {describe_when(snapshot)} taken and verified ({describe_size(snapshot.size)})."
        )
        self.refresh()
        self.select(snapshot.id)

    @reports_errors
    def on_create_failed(self, error: BaseException) -> None:
        self._finish_creating()
        self.status.setText("The snapshot could not be taken; nothing was changed.")
        self.update_buttons()
        self.hub.report(error)

    @Slot()
    @reports_errors
    def on_restore_clicked(self) -> None:
        snapshot = self.selected()
        if snapshot is None:
            return
        if not snapshot.own:
            self.restore_foreign(snapshot)
            return
        answer = QMessageBox.question(
            self,
            "Restore this snapshot?",
            # The reason names an imported file: shown as text, never read as markup.
            literal(
                f"Restore the snapshot of {describe_when(snapshot)} ({snapshot.reason})?\n\n"
                "What MemDesk remembers now is snapshotted first, so you can undo this by restoring that "
                "snapshot. The window closes and opens again on the restored store."
            ),
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.restore_requested.emit(snapshot.id)

    def restore_foreign(self, snapshot: Snapshot) -> None:
        """A snapshot this MemDesk did not take: what restoring it changes first, then the question."""
        changes = self.backups.foreign_differences(snapshot.id)
        listed = (
            "\n".join(f"• {change.describe()}" for change in changes) or "• no setting, enabled tool or document path"
        )
        if self.ask_foreign(
            f"The snapshot of {describe_when(snapshot)} ({snapshot.reason}) was not taken by this MemDesk: "
            "it was put in the backup folder by something else, copied from elsewhere, or changed since. "
            f"Restoring it would change:\n\n{listed}\n\n"
            "What says 'stays' is kept as it is now (the model, network and backup settings), its imported "
            "tools are disabled and code MemDesk did not write is dropped. Restore it? What MemDesk "
            "remembers now is snapshotted first."
        ):
            self.foreign_accepted = snapshot.id
            self.restore_requested.emit(snapshot.id)

    def ask_foreign(self, question: str) -> bool:
        answer = QMessageBox.question(
            self,
            "Restore a foreign snapshot?",
            literal(question),
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
        )
        return answer == QMessageBox.StandardButton.Yes

    @Slot()
    @reports_errors
    def on_verify_clicked(self) -> None:
        snapshot = self.selected()
        if snapshot is None:
            return
        try:
            self.backups.verify(snapshot.id)
            self.status.setText(f"The snapshot of {describe_when(snapshot)} is intact.")
        finally:
            self.refresh()
            self.select(snapshot.id)

    @Slot()
    @reports_errors
    def on_remove_clicked(self) -> None:
        snapshot = self.selected()
        if snapshot is None:
            return
        answer = QMessageBox.question(
            self,
            "Remove this snapshot?",
            literal(
                f"Remove the snapshot of {describe_when(snapshot)} ({snapshot.reason})?"
                " It cannot be restored afterwards."
            ),
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.backups.remove(snapshot.id)
            self.status.setText(f"The snapshot of {describe_when(snapshot)} was removed.")
            self.refresh()

    @Slot()
    @reports_errors
    def on_open_folder_clicked(self) -> None:
        folder = self.backups.folder
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))

    @Slot()
    @reports_errors
    def on_choose_folder_clicked(self) -> None:
        chosen = QFileDialog.getExistingDirectory(self, "Folder for snapshots", str(self.backups.folder))
        if chosen:
            self.set_folder(chosen)

    @Slot()
    @reports_errors
    def on_default_folder_clicked(self) -> None:
        self.set_folder("")

    def set_folder(self, folder: str) -> None:
        """New snapshots go to ``folder`` (empty: the default); those taken before stay where they are."""
        self.services.settings_store.set("backup_folder", folder)
        self.status.setText(f"New snapshots go to {self.backups.folder}; earlier ones stay where they were.")
        self.refresh()


class BackupsController(QObject):
    """Backups in the window: File > Backups… (``action``), the daily snapshot, and a restore, which
    closes ``window`` (``restore_after_close`` says which snapshot, for main.py)."""

    def __init__(self, services: Services, jobs: Jobs, hub: ErrorHub, window: QWidget) -> None:
        super().__init__(window)
        self.services, self.jobs, self.hub, self.window = services, jobs, hub, window
        self.dialog: BackupsDialog | None = None
        self.restore_after_close: str | None = None
        #: The snapshot to restore is foreign and the user accepted its differences.
        self.restore_foreign = False
        self.action = QAction("&Backups…", window)
        self.action.setShortcut("Ctrl+Shift+B")
        self.action.triggered.connect(self.open_dialog)
        self.daily = daily_snapshots(services, on_error=self._report_from_thread)
        self.timer = QTimer(self)
        self.timer.setInterval(DAILY_CHECK_MS)
        self.timer.timeout.connect(self.check_daily)

    def _report_from_thread(self, error: BaseException) -> None:
        # From the snapshot's own thread: the hub's signal carries it to the GUI thread.
        self.hub.report(error)

    @Slot()
    @reports_errors
    def start(self) -> None:
        """When the window is up: the day's snapshot if due, and the hourly check."""
        self.check_daily()
        self.timer.start()

    @Slot()
    @reports_errors
    def check_daily(self) -> None:
        self.daily.check()

    def close(self) -> None:
        """The window closes: no snapshot starts any more."""
        self.timer.stop()
        self.daily.close()

    @Slot()
    @reports_errors
    def open_dialog(self) -> BackupsDialog:
        if self.dialog is None:
            self.dialog = BackupsDialog(self.services, self.jobs, self.hub, self.window)
            self.dialog.restore_requested.connect(self.restore)
        self.dialog.refresh()
        self.dialog.show()
        self.dialog.raise_()
        return self.dialog

    @Slot(str)
    @reports_errors
    def restore(self, snapshot_id: str) -> None:
        self.restore_after_close = snapshot_id
        self.restore_foreign = self.dialog is not None and self.dialog.foreign_accepted == snapshot_id
        if self.dialog is not None:
            self.dialog.close()
        self.window.close()


def restore_snapshot(
    backups: Backups, snapshot_id: str, parent: QWidget | None = None, *, accept_foreign: bool = False
) -> Snapshot | None:
    """Restore with a progress dialog while nothing else has the store open (the caller closed
    it); returns the snapshot of what was replaced (None for a store too damaged to copy).
    ``accept_foreign``: the user saw and accepted a foreign snapshot's differences."""
    progress = QProgressDialog("Restoring the snapshot…", "", 0, 0, parent)
    progress.setWindowTitle("MemDesk")
    progress.setCancelButton(None)  # a restore is one transaction: there is nothing to stop halfway
    progress.setWindowModality(Qt.WindowModality.ApplicationModal)
    progress.setMinimumDuration(0)
    progress.show()

    def step(done: int, total: int) -> None:
        progress.setRange(0, max(total, 1))
        progress.setValue(done)
        QApplication.processEvents()

    try:
        return backups.restore(snapshot_id, progress=step, accept_foreign=accept_foreign)
    finally:
        progress.close()


def restored_message(snapshot: Snapshot, undo: Snapshot | None, store: Path) -> str:
    if undo is None:
        return (
            f"Restored the snapshot of {describe_when(snapshot)}. "
            f"The damaged store was kept beside it in {store.parent}."
        )
    return (
        f"Restored the snapshot of {describe_when(snapshot)}. "
        "What MemDesk remembered before is kept as the snapshot of "
        f"{describe_when(undo)} (File > Backups…): restore it to undo this."
    )
