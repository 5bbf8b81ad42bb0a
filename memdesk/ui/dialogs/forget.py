"""Memory > Forget… (Ctrl+Shift+F): forget a person or topic everywhere in the agent's memory,
and the agent's retention policy ("forget conversation messages older than N days").

The dialog previews first (grouped by kind, each kind expandable to a few samples, the backups
that may still hold it), asks before removing, and runs both steps off the GUI thread on a
connection of their own (the VACUUM at the end must not hold the connection the panels read
through), with progress. Afterwards the window's panels and transcript are refreshed.

A reader elsewhere (another connection of the window, another program) keeps the WAL, and the
removed text in it, from being emptied: the window then refreshes its panels and tries again for a
few seconds, and says so when it still cannot.

Retention runs while the user is idle (the same idle time as consolidation): a policy nobody has
confirmed yet is shown once, with what it would remove, and applies only after Yes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QStatusBar,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from memdesk.app.operations import open_forgetting, open_retention
from memdesk.app.services import Services
from memdesk.core.memory.forget import ForgetPreview, ForgetResult
from memdesk.core.storage import open_database
from memdesk.core.storage.scrubbing import empty_wal
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.common.text import literal, plain_label, set_plain
from memdesk.ui.common.window_state import WindowState
from memdesk.ui.workers.jobs import Jobs
from memdesk.ui.workers.session import SessionWorker

FORGET_TEXT = "&Forget…"


class _Progress(QObject):
    """Carries a job thread's progress to the GUI thread (a queued signal)."""

    changed = Signal(str, float)


class ForgetDialog(QDialog):
    """Type what to forget, see what would go, forget it.

    Signals:
        forgotten(object): the ForgetResult, after the removal finished
    """

    forgotten = Signal(object)

    def __init__(
        self,
        agent_name: str,
        preview: Callable[[str], ForgetPreview],
        apply: Callable[[str, bool, Callable[[str, float], None]], ForgetResult],
        jobs,
        retention: tuple[int, Callable[[int], None]] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        """``preview(text)`` and ``apply(text, purge_backups, progress)`` run on the job pool.
        ``retention``: the agent's current days and a setter (None: not shown)."""
        super().__init__(parent)
        self._preview_fn = preview
        self._apply_fn = apply
        self._jobs = jobs
        self._shown: ForgetPreview | None = None
        self.agent_name = agent_name
        self.setWindowTitle(f"Forget — {agent_name}")
        self.resize(620, 520)
        layout = QVBoxLayout(self)
        intro = plain_label(
            f"Everything {agent_name} remembers about a person or topic: conversation messages (kept as a "
            "placeholder), archival passages and documents, core-memory lines, the knowledge graph, the memory "
            "history, recalled memories and proposals. "
            "Nothing is removed until you press Forget."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        row = QHBoxLayout()
        self.text = QLineEdit()
        self.text.setPlaceholderText("A name or a few words, e.g. Eva")
        self.text.setClearButtonEnabled(True)
        self.preview_button = QPushButton("&Preview")
        row.addWidget(self.text, 1)
        row.addWidget(self.preview_button)
        layout.addLayout(row)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["What would be forgotten", "How many"])
        self.tree.setColumnWidth(0, 440)
        layout.addWidget(self.tree, 1)
        self.status = plain_label("Type who or what to forget, then Preview (Enter).")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.purge = QCheckBox("Also remove it from the backups taken before (then no backup is taken first)")
        self.purge.setVisible(False)
        layout.addWidget(self.purge)
        self.progress = QProgressBar()
        self.progress.setRange(0, 100)
        self.progress.setVisible(False)
        layout.addWidget(self.progress)
        self.days: QSpinBox | None = None
        if retention is not None:
            layout.addWidget(self._retention_box(*retention))
        buttons = QDialogButtonBox()
        self.forget_button = QPushButton("&Forget")
        self.forget_button.setEnabled(False)
        buttons.addButton(self.forget_button, QDialogButtonBox.ButtonRole.DestructiveRole)
        buttons.addButton(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self._progress = _Progress(self)
        self._progress.changed.connect(self.on_progress)
        self.preview_button.clicked.connect(self.on_preview)
        self.text.returnPressed.connect(self.on_preview)
        self.text.textChanged.connect(self.on_text_changed)
        self.forget_button.clicked.connect(self.on_forget)
        #: Asks before removing; replaced in tests.
        self.confirm: Callable[[str], bool] = self._ask

    def _retention_box(self, days: int, set_days: Callable[[int], None]) -> QGroupBox:
        box = QGroupBox("Retention")
        row = QHBoxLayout(box)
        row.addWidget(plain_label("Forget conversation messages older than"))
        self.days = QSpinBox()
        self.days.setRange(0, 36500)
        self.days.setSuffix(" days")
        self.days.setSpecialValueText("never (keep all)")
        self.days.setValue(days)
        row.addWidget(self.days)
        save = QPushButton("&Set")
        row.addWidget(save)
        row.addStretch(1)
        self.retention_note = plain_label("")
        row.addWidget(self.retention_note)
        self._set_days = set_days
        save.clicked.connect(self.on_set_retention)
        return box

    @Slot()
    @reports_errors
    def on_set_retention(self) -> None:
        assert self.days is not None
        self._set_days(self.days.value())
        set_plain(
            self.retention_note, "Set: you see what it removes before it first runs" if self.days.value() else "Off"
        )

    def _ask(self, question: str) -> bool:
        answer = QMessageBox.question(self, "Forget", literal(question))
        return answer == QMessageBox.StandardButton.Yes

    # --- preview -----------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_text_changed(self, *_args) -> None:
        self._shown = None
        self.forget_button.setEnabled(False)

    @Slot()
    @reports_errors
    def on_preview(self) -> None:
        text = self.text.text().strip()
        if not text:
            set_plain(self.status, "Type who or what to forget first.")
            return
        self._busy(True, "Looking through memory…")
        self._jobs.run(lambda: self._preview_fn(text), self.show_preview, self.on_failed)

    def show_preview(self, preview: ForgetPreview) -> None:
        self._busy(False)
        if preview.text != self.text.text().strip():
            return  # the text changed meanwhile: that preview is not for it
        self._shown = preview
        self.tree.clear()
        for kind in preview.kinds:
            item = QTreeWidgetItem([kind.label, str(kind.count)])
            item.setData(0, Qt.ItemDataRole.UserRole, kind.kind)
            for sample in kind.samples:
                QTreeWidgetItem(item, [sample, ""])
            self.tree.addTopLevelItem(item)
        if preview.empty:
            set_plain(self.status, f"Nothing in {self.agent_name}'s memory is about \u201c{preview.text}\u201d.")
        else:
            notes = [f"{preview.total} items would be forgotten. Expand a line to see examples."]
            if preview.similar:
                notes.append(
                    f"{preview.similar} of the messages and passages say it in other words (found by meaning)."
                )
            if preview.kv_cache_files:
                notes.append("Saved prompt states are deleted too; the model rebuilds them.")
            if preview.user_code:
                named = ", ".join(preview.user_code)
                notes.append(f"Your own tool files name it too; they are yours and stay as they are: {named}.")
            set_plain(self.status, " ".join(notes))
        self.purge.setVisible(bool(preview.backups) and not preview.empty)
        if preview.backups:
            self.purge.setText(
                f"Also remove it from the {len(preview.backups)} backup(s) taken before (then no backup is taken first)"
            )
        self.forget_button.setEnabled(not preview.empty)

    # --- forget ------------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_forget(self) -> None:
        preview = self._shown
        if preview is None or preview.empty:
            return
        purge = self.purge.isVisible() and self.purge.isChecked()
        where = " and from the backups" if purge else ""
        if not self.confirm(
            f"Forget everything about \u201c{preview.text}\u201d ({preview.total} items) "
            f"from {self.agent_name}'s memory{where}? "
            "Messages stay as a placeholder; the rest is removed for good."
        ):
            return
        self._busy(True, "Forgetting…")
        self.progress.setVisible(True)
        self.progress.setValue(0)
        progress = self._progress.changed.emit
        self._jobs.run(lambda: self._apply_fn(preview.text, purge, progress), self.on_forgotten, self.on_failed)

    @Slot(str, float)
    @reports_errors
    def on_progress(self, what: str, done: float) -> None:
        set_plain(self.status, what)
        self.progress.setValue(int(done * 100))

    @reports_errors
    def on_forgotten(self, result: ForgetResult) -> None:
        self._busy(False)
        self.progress.setVisible(False)
        self.tree.clear()
        self._shown = None
        self.forget_button.setEnabled(False)
        lines = [result.removed.describe() + "."]
        if result.snapshot is not None:
            lines.append("A backup was taken first.")
        if result.backups_purged:
            lines.append(f"Removed from {result.backups_purged} backup(s).")
        lines += [f"Could not purge backup {error}" for error in result.backup_errors]
        set_plain(self.status, " ".join(lines))
        self.forgotten.emit(result)

    def report_journal(self, emptied: bool, wal_name: str) -> None:
        """After the retries (ForgetController.settle_journal): whether the WAL still holds old pages."""
        if not emptied:
            set_plain(
                self.status,
                f"{self.status.text()} Some of the forgotten text is still in the store's journal ({wal_name}): "
                "another connection was reading the store. It is emptied when that program, or MemDesk, closes.",
            )

    @reports_errors
    def on_failed(self, error: BaseException) -> None:
        self._busy(False)
        self.progress.setVisible(False)
        set_plain(self.status, getattr(error, "user_message", None) or f"Failed: {error}")

    def _busy(self, busy: bool, text: str = "") -> None:
        for widget in (self.text, self.preview_button):
            widget.setEnabled(not busy)
        if busy:
            self.forget_button.setEnabled(False)
            set_plain(self.status, text)


#: How long the window keeps trying to empty the WAL after a forget, and how often.
JOURNAL_RETRY_S, JOURNAL_RETRY_EVERY_S = 5.0, 0.2


class ForgetController(QObject):
    """Memory > Forget… (``action``, for the Memory menu) and retention while the user is idle, for
    the agent shown. ``window`` parents the dialogs.

    Signals:
        forgotten(int): memory of this agent was removed (what the panels show of it is stale)
        forgotten_applied(object): the ForgetResult, once the window's panels were told
        journal_settled(bool): afterwards, whether the WAL was emptied (retried meanwhile)
    """

    forgotten = Signal(int)
    forgotten_applied = Signal(object)
    journal_settled = Signal(bool)

    def __init__(
        self,
        services: Services,
        state: WindowState,
        jobs: Jobs,
        hub: ErrorHub,
        worker: SessionWorker,
        status: QStatusBar,
        window: QWidget,
        backups: Callable[[], object] | None = None,
    ) -> None:
        """``backups``: makes the store's snapshot store (None: no backups to list or purge)."""
        super().__init__(window)
        self.services, self.state, self.jobs, self.hub = services, state, jobs, hub
        self.worker, self.status, self.window = worker, status, window
        self._backups = backups
        self.action = QAction(FORGET_TEXT, window)
        self.action.setShortcut(QKeySequence("Ctrl+Shift+F"))
        self.action.triggered.connect(self.open_dialog)
        self.dialog: ForgetDialog | None = None
        worker.retention_waits.connect(self.on_retention_waits)
        worker.retention_done.connect(self.on_retention_done)

    # --- running on a connection of its own --------------------------------------------------
    def _on_own_connection(self, work: Callable):
        services = self.services
        db = open_database(services.paths.database, key=services.key)
        try:
            return work(db)
        finally:
            db.close()

    def _backup_store(self):
        return self._backups() if self._backups is not None else None

    @Slot()
    @reports_errors
    def open_dialog(self) -> ForgetDialog | None:
        agent_id = self.state.agent_id
        if agent_id is None:
            self.hub.notify("Open an agent first")
            return None
        if self.state.busy:
            self.hub.notify("Stop the current reply (Esc) before forgetting")
            return None
        services = self.services
        record = services.agents.get(agent_id)
        backups = self._backup_store()

        def preview(text: str) -> ForgetPreview:
            return self._on_own_connection(lambda db: open_forgetting(services, backups, db=db).preview(agent_id, text))

        def apply(text: str, purge: bool, progress) -> ForgetResult:
            return self._on_own_connection(
                lambda db: open_forgetting(services, backups, db=db).apply(
                    agent_id, text, purge_backups=purge, progress=progress
                )
            )

        retention = open_retention(services)
        dialog = ForgetDialog(
            record.name,
            preview,
            apply,
            self.jobs,
            (retention.policy(agent_id).days, lambda days: retention.set_days(agent_id, days)),
            self.window,
        )
        dialog.forgotten.connect(lambda result: self.after_forget(dialog, agent_id, result))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.destroyed.connect(lambda *_: setattr(self, "dialog", None))
        self.dialog = dialog
        dialog.open()
        return dialog

    def after_forget(self, dialog: ForgetDialog, agent_id: int, result: ForgetResult) -> None:
        self.refresh_window(agent_id)
        self.forgotten_applied.emit(result)
        self.settle_journal(dialog, result)

    def settle_journal(self, dialog: ForgetDialog, result: ForgetResult) -> None:
        """A WAL another reader kept: the panels have just read again (ending their reads), so try
        to empty it for a few seconds more; then say whether it is empty."""
        if result.checkpointed:
            self.journal_settled.emit(True)
            return
        database = self.services.paths.database
        wal_name = f"{database.name}-wal"

        def retry() -> bool:
            deadline = time.monotonic() + JOURNAL_RETRY_S
            while True:
                if self._on_own_connection(empty_wal):
                    return True
                if time.monotonic() >= deadline:
                    return False
                time.sleep(JOURNAL_RETRY_EVERY_S)

        def settled(emptied: bool) -> None:
            dialog.report_journal(emptied, wal_name)
            self.journal_settled.emit(emptied)

        self.jobs.run(retry, settled, lambda error: settled(False))

    def refresh_window(self, agent_id: int) -> None:
        """What the window shows of memory was read before the removal: it reads it again."""
        self.forgotten.emit(agent_id)

    # --- retention while idle (the session's idle scheduler runs it) -------------------------
    @Slot(int, str)
    @reports_errors
    def on_retention_waits(self, agent_id: int, description: str) -> None:
        """A policy nobody confirmed is due (said once per agent and session): asked here."""
        if agent_id != self.state.agent_id:
            return
        if not self.ask_retention(description):
            self.status.showMessage("Retention waits: change or confirm it in Memory > Forget…", 10_000)
            return
        self.status.showMessage("Forgetting old conversation messages…", 10_000)
        self.worker.session.confirm_retention(agent_id)

    def ask_retention(self, description: str) -> bool:
        """Asked once per policy (replaced in tests)."""
        answer = QMessageBox.question(
            self.window, "Retention", literal(f"{description}\n\nForget them now, and from now on while you are away?")
        )
        return answer == QMessageBox.StandardButton.Yes

    @Slot(int, int)
    @reports_errors
    def on_retention_done(self, agent_id: int, removed: int) -> None:
        if removed:
            self.status.showMessage(f"Forgot {removed} old conversation messages (retention)", 30_000)
            self.refresh_window(agent_id)
