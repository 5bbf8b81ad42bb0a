"""Other assistants' conversations in the window: File > Import history… (and a ChatGPT or Claude
export dropped on the window), Memory > Imported conversations… and Memory > What MemDesk
learned….

The export is read for its preview on the job pool (a cancellable read, with progress); the
import itself runs on the session's job thread as background work, a slice at a time
(memdesk.session.history_jobs), so the window stays responsive and a message sent meanwhile is
answered first. Its progress reaches here as the session adapter's signals; Stop pauses it
(resumable), Resume goes on. A snapshot of the store is taken before it begins.

Signals:
    memory_changed(list): labels of core memory blocks an accepted proposal changed
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QStatusBar, QWidget

from memdesk.app.operations import import_history
from memdesk.app.services import Services, snapshot_before
from memdesk.core.base.errors import MemDeskError
from memdesk.core.transfer.history.importer import DONE, PAUSED, ImportProgress
from memdesk.core.transfer.history.learning import Learning
from memdesk.core.transfer.history.listing import import_states
from memdesk.core.transfer.history.plan import imports
from memdesk.core.transfer.history.preview import Preview, Selection
from memdesk.core.transfer.history.reading import is_export
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.common.window_state import WindowState
from memdesk.ui.dialogs.history_import import ImportHistoryDialog
from memdesk.ui.dialogs.imported_conversations import ImportedConversationsDialog
from memdesk.ui.dialogs.learned import LearnedDialog
from memdesk.ui.workers.jobs import Jobs
from memdesk.ui.workers.reads import Reads
from memdesk.ui.workers.session import SessionWorker

IMPORT_TEXT = "Import &history (ChatGPT, Claude, Open WebUI)…"
LEARNED_TEXT = "What MemDesk &learned…"
EXPORT_FILTER = "Conversation exports (*.zip *.json *.md *.markdown *.txt);;All files (*)"


class _ReadCancelled(Exception):
    """The person closed the preview while the export was being read."""


class _Reading(QObject):
    """A preview's progress, carried from the job pool to the GUI thread (a queued signal)."""

    share = Signal(float)


class HistoryImports(QObject):
    memory_changed = Signal(list)

    def __init__(
        self,
        services: Services,
        state: WindowState,
        worker: SessionWorker,
        jobs: Jobs,
        reads: Reads,
        hub: ErrorHub,
        status: QStatusBar,
        window: QWidget,
    ) -> None:
        super().__init__(window)
        self.services, self.state, self.worker, self.jobs, self.reads = services, state, worker, jobs, reads
        self.hub, self.status, self.window = hub, status, window
        self.dialog: ImportHistoryDialog | None = None
        self.learned_dialog: LearnedDialog | None = None
        self.conversations_dialog: ImportedConversationsDialog | None = None
        self.last_progress: ImportProgress | None = None
        self.running = False  # an import was started here and has not finished or stopped
        self._cancel_read = threading.Event()
        self.import_action = QAction(IMPORT_TEXT, window)
        self.import_action.setShortcut(QKeySequence("Ctrl+Shift+I"))
        self.import_action.triggered.connect(self.on_import_triggered)
        self.conversations_action = QAction("&Imported conversations…", window)
        self.conversations_action.triggered.connect(self.show_conversations)
        self.learned_action = QAction(LEARNED_TEXT, window)
        self.learned_action.triggered.connect(self.show_learned)
        worker.import_progress.connect(self.on_progress)
        worker.import_finished.connect(self.on_finished)
        state.events.agent_id.connect(self.on_agent_shown)

    # --- choosing an export --------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_import_triggered(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Import history", "", EXPORT_FILTER)
        if path:
            self.offer(Path(path))

    def take_dropped(self, paths: list[str]) -> list[str]:
        """Of files dropped on the window, the conversation exports (a zip or JSON whose content is
        one) are offered for import; the rest are returned (they go to Documents)."""
        exports = [p for p in paths if is_export(Path(p))]
        if exports:
            self.offer(Path(exports[0]))
        return [p for p in paths if p not in exports]

    def offer(self, path: Path) -> ImportHistoryDialog | None:
        """Read ``path`` for its preview (off the GUI thread), in the import dialog."""
        agent_id = self.state.agent_id
        if agent_id is None:
            self.hub.notify("Open an agent first: imported conversations go into an agent's memory")
            return None
        if self.state.private_chat:
            self.hub.notify("Conversations cannot be imported during a private chat: end it first")
            return None
        if self.running and self.dialog is not None:
            self.dialog.show()
            self.dialog.raise_()
            self.hub.notify("An import is running: stop it, or let it finish, before importing another export")
            return self.dialog
        self._close_dialog()
        self.dialog = dialog = self._new_dialog(path, agent_id)
        dialog.show()
        self._cancel_read = cancel = threading.Event()
        dialog.cancel_requested.connect(cancel.set)
        reading = _Reading(dialog)
        reading.share.connect(dialog.show_reading)

        def progress(share: float) -> None:
            if cancel.is_set():
                raise _ReadCancelled
            reading.share.emit(share)

        services = self.services
        self.jobs.run(
            lambda: import_history(services, agent_id, path, apply=False, progress=progress, keep_rows=True).preview,
            lambda preview: self._previewed(dialog, preview),
            lambda error: self._unreadable(dialog, error),
        )
        return dialog

    def _new_dialog(self, path: Path, agent_id: int) -> ImportHistoryDialog:
        dialog = ImportHistoryDialog(path, self.state.agent_name, self.window)
        dialog.import_requested.connect(lambda selection: self.start(dialog, agent_id, selection))
        dialog.stop_requested.connect(self.worker.pause_import)
        dialog.resume_requested.connect(self.resume)
        dialog.learned_requested.connect(self.show_learned)
        dialog.conversations_requested.connect(self.show_conversations)
        return dialog

    def _previewed(self, dialog: ImportHistoryDialog, preview: Preview) -> None:
        if dialog is self.dialog and dialog.isVisible():
            dialog.show_preview(preview)

    def _unreadable(self, dialog: ImportHistoryDialog, error: BaseException) -> None:
        if isinstance(error, _ReadCancelled):
            return
        if not isinstance(error, MemDeskError):
            self.hub.report(error)  # a bug: logged with its trace
        if dialog is self.dialog and dialog.isVisible():
            dialog.show_failed(error)

    # --- the import ------------------------------------------------------------------------------
    def start(self, dialog: ImportHistoryDialog, agent_id: int, selection: Selection) -> None:
        preview = dialog.preview_page.preview
        assert preview is not None  # the dialog asks only once it shows a preview
        t = preview.tally
        totals = (t.conversations + t.unreadable, t.chosen_messages)
        path, services = dialog.path, self.services
        dialog.show_starting()
        self.last_progress = None
        self.jobs.run(
            lambda: snapshot_before(services, f"before importing {path.name}"),
            lambda _snapshot: self._begin(dialog, agent_id, path, selection, totals),
            self.hub.report,
        )

    def _begin(
        self, dialog: ImportHistoryDialog, agent_id: int, path: Path, selection: Selection, totals: tuple[int, int]
    ) -> None:
        try:
            self.worker.import_history(agent_id, path, selection, totals)
        except MemDeskError as error:
            dialog.show_failed(error)
            return
        self.running = True
        self.status.showMessage(f"Importing {path.name} in the background…", 10_000)

    @Slot(int)
    @reports_errors
    def resume(self, import_id: int) -> None:
        """Go on with a stopped import; its progress shows in the import dialog."""
        agent_id = self.state.agent_id
        if agent_id is None:
            return
        try:
            self.worker.resume_import(import_id)
        except MemDeskError as error:
            self.hub.report(error)
            return
        self.running = True
        self.status.showMessage("Going on with the import…", 10_000)
        if self.dialog is not None and self.dialog.import_id == import_id:
            self._show_resumed(self.dialog)
            return
        db = self.services.db
        self.reads.load(
            (self, "resumed"),
            lambda: next((Path(i.path) for i in import_states(db, agent_id) if i.id == import_id), None),
            lambda path: self._resumed_in_new_dialog(agent_id, import_id, path),
            self.hub.report,
        )

    def _resumed_in_new_dialog(self, agent_id: int, import_id: int, path: Path | None) -> None:
        self._close_dialog()
        self.dialog = self._new_dialog(path or Path("export"), agent_id)
        self.dialog.import_id = import_id
        self._show_resumed(self.dialog)

    def _show_resumed(self, dialog: ImportHistoryDialog) -> None:
        # Progress may have come in while the path was read: the dialog shows it, not "starting".
        progress = self.last_progress
        if progress is not None and progress.import_id == dialog.import_id and progress.status not in (PAUSED, DONE):
            dialog.show_progress(progress)
        else:
            dialog.show_starting()
        dialog.show()

    @Slot(object)
    @reports_errors
    def on_progress(self, progress: ImportProgress) -> None:
        self.last_progress = progress
        if progress.status in (PAUSED, DONE):
            self.running = False
        if self.dialog is not None:
            self.dialog.show_progress(progress)
        if progress.status == PAUSED:
            self.status.showMessage(f"Import stopped: {progress.describe()} (Memory > Imported conversations)", 30_000)
        elif progress.status != DONE:
            self.status.showMessage(f"Importing history: {progress.describe()}")
        if self.conversations_dialog is not None and progress.status == PAUSED:
            self.conversations_dialog.refresh()

    @Slot(int, int, int)
    @reports_errors
    def on_finished(self, agent_id: int, import_id: int, proposals: int) -> None:
        self.running = False
        progress = self.last_progress if self.last_progress and self.last_progress.import_id == import_id else None
        db = self.services.db
        self.reads.load(
            (self, "finished", import_id),
            lambda: _skipped(db, agent_id, import_id),
            lambda skipped: self._show_finished(agent_id, progress, proposals, skipped),
            self.hub.report,
        )

    def _show_finished(
        self, agent_id: int, progress: ImportProgress | None, proposals: int, skipped: list[str]
    ) -> None:
        if self.dialog is not None:
            self.dialog.show_finished(progress, proposals, skipped)
        message = "Import finished"
        if progress is not None:
            message += f": {progress.conversations_added:,} conversations, {progress.messages_added:,} messages"
        if proposals:
            message += f"; {proposals} things MemDesk learned wait for you (Memory > What MemDesk learned)"
        self.status.showMessage(message, 60_000)
        if agent_id == self.state.agent_id:
            self.update_learned_action()
            if self.conversations_dialog is not None:
                self.conversations_dialog.refresh()

    # --- what was learned, and the conversations --------------------------------------------------
    @Slot()
    @reports_errors
    def on_agent_shown(self) -> None:
        for dialog in (self.learned_dialog, self.conversations_dialog):
            if dialog is not None:
                dialog.close()
        self.update_learned_action()

    def update_learned_action(self) -> None:
        """The menu entry counts the proposals waiting (read off the GUI thread)."""
        agent_id = self.state.agent_id
        if agent_id is None:
            self._show_learned_count(0)
            return
        memory = self.services.memory
        self.reads.load(
            (self, "learned"),
            lambda: len(Learning(memory).pending(agent_id)),
            self._show_learned_count,
            self.hub.report,
        )

    def _show_learned_count(self, count: int) -> None:
        self.learned_action.setText(f"{LEARNED_TEXT[:-1]} ({count})…" if count else LEARNED_TEXT)

    @Slot()
    @reports_errors
    def show_learned(self) -> LearnedDialog | None:
        agent_id = self.state.agent_id
        if agent_id is None:
            return None
        if self.learned_dialog is not None:
            self.learned_dialog.close()
        dialog = LearnedDialog(self.services.memory, agent_id, self.state.agent_name, self.reads, self.window)
        dialog.memory_changed.connect(self.memory_changed)
        dialog.memory_changed.connect(lambda _labels: self.update_learned_action())
        dialog.failed.connect(self.hub.report)
        dialog.finished.connect(lambda _code: self.update_learned_action())
        self.learned_dialog = dialog
        dialog.show()
        return dialog

    @Slot()
    @reports_errors
    def show_conversations(self) -> ImportedConversationsDialog | None:
        agent_id = self.state.agent_id
        if agent_id is None:
            return None
        if self.conversations_dialog is None or not self.conversations_dialog.isVisible():
            dialog = ImportedConversationsDialog(
                self.services.memory, agent_id, self.state.agent_name, self.reads, self.window
            )
            dialog.resume_requested.connect(self.resume)
            dialog.failed.connect(self.hub.report)
            self.conversations_dialog = dialog
        self.conversations_dialog.show()
        self.conversations_dialog.raise_()
        return self.conversations_dialog

    def show_message(self, conversation_id: int, message_id: int) -> None:
        """An imported message (a search hit, a proposal's or a fact's source), in its conversation."""
        dialog = self.show_conversations()
        if dialog is not None:
            dialog.open_conversation(conversation_id, highlight=message_id)

    def _close_dialog(self) -> None:
        if self.dialog is not None:
            self._cancel_read.set()
            self.dialog.close()
            self.dialog.deleteLater()
            self.dialog = None

    def close_dialogs(self) -> None:
        self._close_dialog()
        for dialog in (self.learned_dialog, self.conversations_dialog):
            if dialog is not None:
                dialog.close()


def _skipped(db, agent_id: int, import_id: int) -> list[str]:
    """What an import left out, as lines for its summary (on the reads' thread)."""
    found = [i for i in imports(db, agent_id) if i["id"] == import_id]
    if not found:
        return []
    skipped = found[0]["skipped"]
    lines = [f"{where}: {why}" for where, why in skipped.get("conversations", [])][:5]
    parts = skipped.get("parts", {})
    lines += [f"{n} × {why}" if n > 1 else why for why, n in sorted(parts.items())]
    return lines
