"""Consolidation in the window: what an idle-time pass did, and the dialog that reviews proposed
changes.

The pass runs on the session's job thread while the user is idle (memdesk.session), without marking
it busy, so the chat stays usable; a message the user sends cancels it first. In "ask" mode the pass
leaves proposals; Memory > Review proposed memory changes (Ctrl+Shift+R) lists them.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QStatusBar,
    QVBoxLayout,
    QWidget,
)

from memdesk.app.agents import open_consolidator
from memdesk.app.services import Services
from memdesk.core.consolidation.consolidator import Consolidator, PassResult
from memdesk.core.consolidation.store import FAILED, Change, ConsolidationStore
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import literal, plain_label
from memdesk.ui.common.window_state import WindowState
from memdesk.ui.workers.reads import Reads
from memdesk.ui.workers.session import SessionWorker

REVIEW_TEXT = "&Review proposed memory changes…"


def touched_blocks(changes: list[Change]) -> list[str]:
    return sorted(
        {str(c.arguments["label"]) for c in changes if c.function.startswith("core_memory_") and "label" in c.arguments}
    )


class ProposalsDialog(QDialog):
    """The changes a pass proposed, each with a check box: apply or reject the checked ones. The
    list is read off the GUI thread (``reads``); applying or rejecting is the user's write, made at
    once, and the list is read again after it (the buttons wait for it).

    Signals:
        applied(list): labels of core memory blocks that changed
        archival_changed(): passages were added
        loaded(): the list shows what was read last
    """

    applied = Signal(list)
    archival_changed = Signal()
    loaded = Signal()

    def __init__(
        self, consolidation: Consolidator, pending: list[Change], reads: Reads, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.consolidation, self.reads = consolidation, reads
        self._closed = False
        self.finished.connect(self._on_finished)
        self.setWindowTitle("Proposed memory changes")
        self.resize(640, 420)
        layout = QVBoxLayout(self)
        intro = QLabel(
            "While you were away, consolidation read the conversation and proposes these changes to what the "
            "companion remembers. Apply the ones that are right; reject the rest."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.list = QListWidget()
        layout.addWidget(self.list, 1)
        self.empty = QLabel("No memory changes are waiting for review.")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.empty)
        self.outcome = plain_label()
        self.outcome.setWordWrap(True)
        layout.addWidget(self.outcome)
        buttons = QDialogButtonBox()
        self.apply_button = QPushButton("&Apply checked")
        self.apply_button.setDefault(True)
        self.reject_button = QPushButton("Re&ject checked")
        buttons.addButton(self.apply_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.reject_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.apply_button.clicked.connect(self.on_apply_clicked)
        self.reject_button.clicked.connect(self.on_reject_clicked)
        self.show_pending(pending)

    def refresh(self) -> None:
        """Read the proposals again; until they are shown, none can be applied or rejected twice."""
        self.apply_button.setEnabled(False)
        self.reject_button.setEnabled(False)
        self.reads.load((self, "pending"), self.consolidation.pending, self._show_if_open)

    def _show_if_open(self, pending: list[Change]) -> None:
        if not self._closed:  # a closed review is deleted: nothing of it may be touched
            self.show_pending(pending)

    def show_pending(self, pending: list[Change]) -> None:
        self.list.clear()
        for change in pending:
            item = QListWidgetItem(change.describe())
            item.setData(Qt.ItemDataRole.UserRole, change.id)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            item.setToolTip(
                literal(
                    f"Proposed {change.created_at:%Y-%m-%d %H:%M}"
                    + (f"\nWhy: {change.thoughts}" if change.thoughts else "")
                )
            )
            self.list.addItem(item)
        has_any = self.list.count() > 0
        self.list.setVisible(has_any)
        self.empty.setVisible(not has_any)
        self.apply_button.setEnabled(has_any)
        self.reject_button.setEnabled(has_any)
        self.loaded.emit()

    @Slot(int)
    @reports_errors
    def _on_finished(self, _result: int) -> None:
        self._closed = True

    def checked_ids(self) -> list[int]:
        return [
            int(self.list.item(i).data(Qt.ItemDataRole.UserRole))
            for i in range(self.list.count())
            if self.list.item(i).checkState() == Qt.CheckState.Checked
        ]

    @Slot()
    @reports_errors
    def on_apply_clicked(self) -> None:
        decided = [self.consolidation.accept(change_id) for change_id in self.checked_ids()]
        failed = [c for c in decided if c.status == FAILED]
        done = [c for c in decided if c.status != FAILED]
        self.outcome.setText(
            f"Applied {len(done)} change(s)." + "".join(f"\nNot applied: {c.describe()} ({c.result})" for c in failed)
        )
        if done:
            self.applied.emit(touched_blocks(done))
            if any(c.function == "archival_memory_insert" for c in done):
                self.archival_changed.emit()
        self.refresh()

    @Slot()
    @reports_errors
    def on_reject_clicked(self) -> None:
        decided = [self.consolidation.reject(change_id) for change_id in self.checked_ids()]
        self.outcome.setText(f"Rejected {len(decided)} change(s).")
        self.refresh()


class ConsolidationController(QObject):
    """Consolidation's results and review for the agent shown. The passes themselves run while the
    user is idle, on the session's idle scheduler (memdesk.session.idle), and a message the user
    sends preempts them. ``review_action`` goes in the Memory menu; it counts the proposals waiting,
    read off the GUI thread (``reads``) as the review dialog's list is.

    Signals:
        memory_changed(list): labels of core memory blocks applied proposals changed
        archival_changed(): archival memory changed (a pass or an applied proposal added passages)
    """

    memory_changed = Signal(list)
    archival_changed = Signal()

    def __init__(
        self,
        services: Services,
        state: WindowState,
        worker: SessionWorker,
        status: QStatusBar,
        reads: Reads,
        window: QWidget,
    ) -> None:
        super().__init__(window)
        self.services, self.state, self.status, self.reads, self.window = services, state, status, reads, window
        self.dialog: ProposalsDialog | None = None  # the review open
        self.review_action = QAction(REVIEW_TEXT, window)
        self.review_action.setShortcut(QKeySequence("Ctrl+Shift+R"))
        self.review_action.triggered.connect(self.open_review)
        worker.consolidation_finished.connect(self.on_finished)
        state.events.agent_id.connect(self.on_agent_shown)
        self.update_review_action()

    @Slot()
    @reports_errors
    def on_agent_shown(self) -> None:
        self.update_review_action()

    @Slot(object)
    @reports_errors
    def on_finished(self, result: PassResult) -> None:
        said = result.status != "skipped" and (result.applied or result.proposed or result.failed)
        self.update_review_action(result.describe() if said else None)
        if result.applied:
            self.archival_changed.emit()

    # --- review ------------------------------------------------------------------------------
    def update_review_action(self, outcome: str | None = None) -> None:
        """Count the proposals waiting (off the GUI thread), then show the count in the menu and a
        pass's ``outcome`` in the status bar, with where to review what it proposed."""
        agent_id = self.state.agent_id
        store = ConsolidationStore(self.services.memory.db, self.services.clock)

        def show(count: int) -> None:
            text = REVIEW_TEXT.replace("changes…", f"changes ({count})…") if count else REVIEW_TEXT
            self.review_action.setText(text)
            if outcome is not None:
                self.status.showMessage(
                    outcome + (" — Memory > Review proposed memory changes" if count else ""), 30_000
                )

        self.reads.load(
            (self, "count", outcome), lambda: len(store.pending(agent_id)) if agent_id is not None else 0, show
        )

    @Slot()
    @reports_errors
    def open_review(self) -> None:
        """The review dialog (``dialog``), once its proposals are read."""
        agent_id = self.state.agent_id
        if agent_id is None:
            return
        services = self.services

        def read() -> tuple[Consolidator, list[Change]]:
            consolidation = open_consolidator(services, services.agents.get(agent_id), None)
            return consolidation, consolidation.pending()

        self.reads.load((self, "review"), read, lambda found: self._open(agent_id, *found))

    def _open(self, agent_id: int, consolidation: Consolidator, pending: list[Change]) -> None:
        if agent_id != self.state.agent_id:
            return  # another agent is shown now
        if self.dialog is not None:
            self.dialog.close()
        dialog = self.dialog = ProposalsDialog(consolidation, pending, self.reads, self.window)
        dialog.applied.connect(self.memory_changed)
        dialog.archival_changed.connect(self.archival_changed)
        dialog.finished.connect(lambda _code: self._closed(dialog))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()

    def _closed(self, dialog: ProposalsDialog) -> None:
        if self.dialog is dialog:
            self.dialog = None
        self.update_review_action()
