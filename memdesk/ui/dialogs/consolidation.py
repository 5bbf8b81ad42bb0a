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
from memdesk.core.consolidation.store import FAILED, Change
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import literal, plain_label
from memdesk.ui.common.window_state import WindowState
from memdesk.ui.workers.session import SessionWorker

REVIEW_TEXT = "&Review proposed memory changes…"


def touched_blocks(changes: list[Change]) -> list[str]:
    return sorted(
        {str(c.arguments["label"]) for c in changes if c.function.startswith("core_memory_") and "label" in c.arguments}
    )


class ProposalsDialog(QDialog):
    """The changes a pass proposed, each with a check box: apply or reject the checked ones.

    Signals:
        applied(list): labels of core memory blocks that changed
        archival_changed(): passages were added
    """

    applied = Signal(list)
    archival_changed = Signal()

    def __init__(self, consolidation: Consolidator, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.consolidation = consolidation
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
        self.refresh()

    def refresh(self) -> None:
        self.list.clear()
        for change in self.consolidation.pending():
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
    sends preempts them. ``review_action`` goes in the Memory menu.

    Signals:
        memory_changed(list): labels of core memory blocks applied proposals changed
        archival_changed(): archival memory changed (a pass or an applied proposal added passages)
    """

    memory_changed = Signal(list)
    archival_changed = Signal()

    def __init__(
        self, services: Services, state: WindowState, worker: SessionWorker, status: QStatusBar, window: QWidget
    ) -> None:
        super().__init__(window)
        self.services, self.state, self.status, self.window = services, state, status, window
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
        self.update_review_action()
        if result.status != "skipped" and (result.applied or result.proposed or result.failed):
            message = result.describe()
            if self.pending_count():
                message += " — Memory > Review proposed memory changes"
            self.status.showMessage(message, 30_000)
        if result.applied:
            self.archival_changed.emit()

    # --- review ------------------------------------------------------------------------------
    def _consolidation(self) -> Consolidator | None:
        if self.state.agent_id is None:
            return None
        return open_consolidator(self.services, self.services.agents.get(self.state.agent_id), None)

    def pending_count(self) -> int:
        consolidation = self._consolidation()
        return len(consolidation.pending()) if consolidation is not None else 0

    def update_review_action(self) -> None:
        count = self.pending_count()
        self.review_action.setText(REVIEW_TEXT.replace("changes…", f"changes ({count})…") if count else REVIEW_TEXT)

    @Slot()
    @reports_errors
    def open_review(self) -> ProposalsDialog | None:
        consolidation = self._consolidation()
        if consolidation is None:
            return None
        dialog = ProposalsDialog(consolidation, self.window)
        dialog.applied.connect(self.memory_changed)
        dialog.archival_changed.connect(self.archival_changed)
        dialog.finished.connect(lambda _code: self.update_review_action())
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog
