"""Writes other apps asked for over MCP, waiting for the user: which app, for which agent, what it
would write (in full) and why; Accept, Edit… (the text to write instead) or Reject. An accepted
write goes through memory's owners like the app's own would, so the memory history names the app.

Other apps write from other processes, so the list is read again every few seconds while it is
shown (through the panels' reads, off the GUI thread); a decision runs as a job (an archival
insert embeds its text) and the list is read again after it.

Signals:
    pending(int): how many writes wait (the dock's title shows it)
    memory_changed(list): an accepted write changed these core memory blocks
    archival_changed(): an accepted write added to archival memory
    failed(object): an error for the message bar
"""

from __future__ import annotations

import json

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QInputDialog,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.connections.approvals import Approval
from memdesk.core.connections.gate import Connections
from memdesk.ui.common import tables
from memdesk.ui.common.buttons import GAP, button, button_row
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import literal
from memdesk.ui.workers.jobs import Jobs
from memdesk.ui.workers.reads import Reads

COLUMNS = ["When", "App", "Agent", "Asks to"]
#: How often the list is read again while shown (apps write from their own processes).
POLL_MS = 3000
#: What each write's text to edit is, by operation.
EDITED = {"core_memory_append": "content", "core_memory_replace": "new_content", "archival_memory_insert": "content"}
WHAT = {
    "core_memory_append": "add to core memory",
    "core_memory_replace": "replace in core memory",
    "archival_memory_insert": "save to archival memory",
}


def describe(approval: Approval) -> str:
    """The whole write, as plain text: nothing of it is cut or rendered."""
    lines = [
        f"{approval.app} asks to {WHAT.get(approval.operation, approval.operation)} of {approval.agent}.",
        f"Why: {approval.reason}",
        "",
    ]
    for name, value in approval.arguments.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines.append(f"{name}:\n{shown}\n")
    return "\n".join(lines)


class ApprovalsPanel(QWidget):
    pending = Signal(int)
    memory_changed = Signal(list)
    archival_changed = Signal()
    failed = Signal(object)

    def __init__(self, connections: Connections, reads: Reads, jobs: Jobs, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.connections, self.reads, self.jobs = connections, reads, jobs
        self.approvals: list[Approval] = []
        layout = QVBoxLayout(self)
        self.empty = QLabel("No app is waiting for your approval. Apps you let write ask here first.")
        self.empty.setWordWrap(True)
        layout.addWidget(self.empty)
        self.table = tables.table(COLUMNS, stretch=3, single=True, fit=False)
        self.table.itemSelectionChanged.connect(self.on_selection_changed)
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)  # plain text: an app's words are never rendered
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.table)
        splitter.addWidget(self.detail)
        layout.addWidget(splitter, 1)
        self.accept_button = button("Accept", self.on_accept_clicked)
        self.edit_button = button("Edit…", self.on_edit_clicked)
        self.reject_button = button("Reject", self.on_reject_clicked)
        layout.addLayout(button_row(self.accept_button, self.edit_button, self.reject_button, GAP))
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()
        self._update_buttons()

    # --- reading ---------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def refresh(self) -> None:
        self.reads.load(("approvals",), self.connections.approvals.pending, self.show_approvals, self.failed.emit)

    def show_approvals(self, approvals: list[Approval]) -> None:
        chosen = self.selected()
        self.approvals = approvals
        tables.set_rows(
            self.table,
            [(f"{a.created_at:%Y-%m-%d %H:%M}", a.app, a.agent, WHAT.get(a.operation, a.operation)) for a in approvals],
        )
        for row, approval in enumerate(approvals):
            if chosen is not None and approval.id == chosen.id:
                self.table.selectRow(row)
        if approvals and self.selected() is None:
            self.table.selectRow(0)
        self.empty.setVisible(not approvals)
        self.on_selection_changed()
        self.pending.emit(len(approvals))

    def selected(self) -> Approval | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not rows or rows[0].row() >= len(self.approvals):
            return None
        return self.approvals[rows[0].row()]

    @Slot()
    @reports_errors
    def on_selection_changed(self) -> None:
        approval = self.selected()
        self.detail.setPlainText(describe(approval) if approval is not None else "")
        self._update_buttons()

    def _update_buttons(self) -> None:
        chosen = self.selected() is not None
        for action in (self.accept_button, self.edit_button, self.reject_button):
            action.setEnabled(chosen)

    # --- deciding --------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_accept_clicked(self) -> None:
        approval = self.selected()
        if approval is not None:
            self.decide(approval, accept=True)

    @Slot()
    @reports_errors
    def on_edit_clicked(self) -> None:
        approval = self.selected()
        if approval is None:
            return
        field = EDITED.get(approval.operation, "content")
        text, ok = QInputDialog.getMultiLineText(
            self,
            "Edit before writing",
            literal(f"What {approval.app} will write ({field}):"),
            str(approval.arguments.get(field, "")),
        )
        if ok:
            self.decide(approval, accept=True, arguments={field: text})

    @Slot()
    @reports_errors
    def on_reject_clicked(self) -> None:
        approval = self.selected()
        if approval is not None:
            self.decide(approval, accept=False)

    def decide(self, approval: Approval, *, accept: bool, arguments: dict | None = None) -> None:
        """Apply (as asked, or with ``arguments``) or reject, as a job; the list is read again after."""
        for action in (self.accept_button, self.edit_button, self.reject_button):
            action.setEnabled(False)
        connections = self.connections

        def work() -> Approval:
            if accept:
                return connections.apply(approval.id, arguments=arguments)
            return connections.reject(approval.id)

        def done(decided: Approval) -> None:
            if decided.status == "applied":
                if decided.operation == "archival_memory_insert":
                    self.archival_changed.emit()
                else:
                    self.memory_changed.emit([str(decided.arguments.get("label", ""))])
            self.refresh()

        def failed(error: BaseException) -> None:
            self.failed.emit(error)
            self.refresh()

        self.jobs.run(work, done, failed)
