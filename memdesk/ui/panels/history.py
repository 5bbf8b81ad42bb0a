"""The memory history: every change to an agent's memory with who made it, when, a readable diff
and what caused it (one click shows the message in the conversation, evicted or not), and
Revert/Undo, which are themselves recorded changes. When the agent changed the same text since,
the revert is shown as a conflict and needs the user's confirmation (revert_dialog.py); nothing is
overwritten silently. What it shows is read off the GUI thread (history_reads.py, through the
panels' reads); how a change reads is history_text.py's.

Signals (HistoryView):
    show_message_requested(int): show this message in the conversation
    changed(list): a revert changed memory (the labels of the blocks it touched)
    graph_changed(): a revert changed the knowledge graph
    loaded(): the changes read last are shown
    failed(object): an error for the message bar
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, QUrl, Signal, Slot
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.agent.conversation_view import event_words
from memdesk.core.base.clock import Clock
from memdesk.core.base.errors import MemDeskError
from memdesk.core.memory.core_memory import CoreMemory, StaleBlockError
from memdesk.core.memory.diff import size_change
from memdesk.core.memory.graph_revert import GRAPH_KINDS
from memdesk.core.memory.history import BLOCK, Change
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.memory.revert import Reverter, RevertPlan
from memdesk.ui.common import palette
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import TextView, literal
from memdesk.ui.panels.history_reads import ALL, SCOPES, Cause, HistoryPage, block_scope, read_cause, read_page
from memdesk.ui.panels.history_text import diff_html, relative_time, who
from memdesk.ui.panels.revert_dialog import RevertDialog
from memdesk.ui.workers.reads import Reads

COLUMNS = ["When", "Who", "Change", "Size"]


class HistoryView(QWidget):
    show_message_requested = Signal(int)
    changed = Signal(list)
    graph_changed = Signal()
    loaded = Signal()
    failed = Signal(object)

    def __init__(
        self,
        core: CoreMemory,
        recall: RecallMemory,
        reverter: Reverter,
        clock: Clock,
        reads: Reads,
        parent: QWidget | None = None,
    ) -> None:
        """``reverter`` reverts here what it supports (blocks, passages, the graph when it has one)."""
        super().__init__(parent)
        self.core = core
        self.recall = recall
        self.clock = clock
        self.reads = reads
        self.history = core.history
        self.reverter = reverter
        self.agent_id: int | None = None
        self.changes: list[Change] = []
        self.revert_dialog: RevertDialog | None = None
        self._scope_wanted: str | None = None  # a scope asked for before its page is read
        self._select_wanted: int | None = None  # a change to select once its page is shown (0: the newest)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        self.scope = QComboBox()
        top.addWidget(QLabel("Show"))
        top.addWidget(self.scope, 1)
        self.undo_button = QPushButton("Undo last change")
        self.undo_button.setToolTip(
            "Revert the newest change shown that can be reverted (Ctrl+Z here); the undo is recorded too"
        )
        top.addWidget(self.undo_button)
        layout.addLayout(top)
        splitter = QSplitter(Qt.Orientation.Vertical)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.details = TextView()
        self.details.setOpenLinks(False)
        splitter.addWidget(self.table)
        splitter.addWidget(self.details)
        layout.addWidget(splitter, 1)
        self.empty = QLabel(
            "No memory changes yet. When the agent or you change what it remembers, each change appears here."
        )
        self.empty.setWordWrap(True)
        self.empty.setStyleSheet(f"color:{palette.muted()};padding:8px")
        layout.addWidget(self.empty)
        row = QHBoxLayout()
        self.show_button = QPushButton("Show in conversation")
        self.revert_button = QPushButton("Revert this change…")
        row.addWidget(self.show_button)
        row.addStretch(1)
        row.addWidget(self.revert_button)
        layout.addLayout(row)
        self.undo_shortcut = QShortcut(QKeySequence.StandardKey.Undo, self, self.on_undo_clicked)
        # Set apart: PySide6 ignores a context= keyword here, and a window-wide Ctrl+Z would be
        # ambiguous with the Knowledge panel's (neither fires).
        self.undo_shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self._fill_scopes([])
        self._connect_signals()
        self._update_buttons()

    def _connect_signals(self) -> None:
        self.scope.currentIndexChanged.connect(lambda _index: self.refresh())
        self.table.itemSelectionChanged.connect(self.on_selection_changed)
        self.details.anchorClicked.connect(self.on_link_clicked)
        self.show_button.clicked.connect(self.on_show_clicked)
        self.revert_button.clicked.connect(self.on_revert_clicked)
        self.undo_button.clicked.connect(self.on_undo_clicked)

    # --- what is shown ---------------------------------------------------------------------
    def set_agent(self, agent_id: int | None) -> None:
        self.agent_id = agent_id
        self.refresh()

    def show_block(self, label: str) -> None:
        """The history of one core memory block, its newest change selected."""
        self._scope_wanted = block_scope(label)
        self._select_wanted = 0
        self.refresh()

    @Slot()
    @reports_errors
    def refresh(self) -> None:
        """Read the agent's changes in the scope shown (or asked for) again, keeping the selection."""
        history, core, agent_id = self.history, self.core, self.agent_id
        scope = self._scope_wanted or self.scope.currentData() or ALL
        self.reads.load(
            (self, "page"), lambda: read_page(history, core, agent_id, scope), self._show_page, self.failed.emit
        )

    def _fill_scopes(self, labels: list[str], scope: str = ALL) -> None:
        self.scope.blockSignals(True)
        self.scope.clear()
        for text, data in SCOPES:
            self.scope.addItem(text, data)
        for label in labels:
            self.scope.addItem(f"Block: {label}", block_scope(label))
        self.scope.setCurrentIndex(max(0, self.scope.findData(scope)))
        self.scope.blockSignals(False)

    @reports_errors
    def _show_page(self, page: HistoryPage) -> None:
        if page.agent_id != self.agent_id:
            return  # read for the agent shown before: its own read follows
        selected = self.selected()
        keep = self._select_wanted if self._select_wanted is not None else (selected.id if selected else None)
        self._scope_wanted = self._select_wanted = None
        self._fill_scopes(page.block_labels, page.scope)
        self.changes = page.changes
        now = self.clock.now()
        self.table.blockSignals(True)  # the selection is put back below, once
        self.table.clearSelection()
        self.table.setRowCount(len(self.changes))
        for row, change in enumerate(self.changes):
            when = QTableWidgetItem(relative_time(change.at, now))
            when.setToolTip(literal(f"{change.at.astimezone():%Y-%m-%d %H:%M:%S}"))
            values = [
                when,
                QTableWidgetItem(who(change.source)),
                QTableWidgetItem(change.describe()),
                QTableWidgetItem(size_change(change.before, change.after)),
            ]
            for column, item in enumerate(values):
                self.table.setItem(row, column, item)
        self.table.blockSignals(False)
        self.empty.setVisible(not self.changes)
        self.table.setVisible(bool(self.changes))
        self.details.setVisible(bool(self.changes))
        if keep == 0 and self.changes:
            keep = self.changes[0].id
        if keep is not None:
            self._select_row(keep)
        self.on_selection_changed()
        self.loaded.emit()

    def selected(self) -> Change | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        return self.changes[rows[0].row()] if rows and rows[0].row() < len(self.changes) else None

    def select_change(self, change_id: int) -> None:
        """Select a change of the page shown; its details follow (read off the GUI thread)."""
        if self._select_row(change_id):
            self.on_selection_changed()

    def _select_row(self, change_id: int) -> bool:
        row = next((row for row, change in enumerate(self.changes) if change.id == change_id), None)
        if row is not None:
            self.table.blockSignals(True)
            self.table.selectRow(row)
            self.table.blockSignals(False)
        return row is not None

    @Slot()
    @reports_errors
    def on_selection_changed(self) -> None:
        change = self.selected()
        self._update_buttons()
        if change is None:
            self.reads.load((self, "details"), lambda: None, lambda _none: self.details.setHtml(""))
            return
        recall = self.recall
        self.reads.load(
            (self, "details"),
            lambda: read_cause(recall, change),
            lambda cause: self.details.setHtml(self.describe(change, cause)),
            self.failed.emit,
        )

    def _update_buttons(self) -> None:
        change = self.selected()
        self.show_button.setEnabled(change is not None and self.source_message(change) is not None)
        self.revert_button.setEnabled(change is not None and self.reverter.supports(change.kind))
        self.undo_button.setEnabled(self.newest_revertible() is not None)

    def newest_revertible(self) -> Change | None:
        """What "Undo last change" reverts: the newest change shown that can be reverted here."""
        return next((c for c in self.changes if self.reverter.supports(c.kind)), None)

    # --- one change ------------------------------------------------------------------------
    def source_message(self, change: Change) -> int | None:
        """The message to show for a change: the call that made it, else the message it answered."""
        return change.step_id or change.message_id

    def describe(self, change: Change, cause: Cause) -> str:
        now = self.clock.now()
        title = html.escape(change.describe())
        when = f"{change.at.astimezone():%Y-%m-%d %H:%M} ({relative_time(change.at, now)})"
        lines = [f"<p><b>{title}</b> · {when}</p>", f"<p>{self._cause_html(change, cause)}</p>"]
        if change.action == "configure":
            before, after = change.before_meta or {}, change.after_meta or {}
            settings = ", ".join(
                f"{key}: {before.get(key)!r} → {after.get(key)!r}" for key in after if before.get(key) != after.get(key)
            )
            lines.append(f"<p>Settings: {html.escape(settings)}</p>")
        else:
            lines.append(diff_html(change.before, change.after))
        return "".join(lines)

    def _cause_html(self, change: Change, cause: Cause) -> str:
        parts = []
        if change.reverts:
            parts.append(f"Reverts change #{change.reverts}.")
        event, trigger = cause.event, cause.trigger
        if trigger is not None:
            said = trigger.search_text.strip().replace("\n", " ")
            said = said if len(said) <= 80 else said[:79] + "…"
            link = f'<a href="message:{trigger.id}">show it in the conversation</a>'
            parts.append(f"Answering your message “{html.escape(said)}” — {link}.")
        elif event is not None:
            words, _inner = event_words(event.kind, event.content)  # as the conversation says it
            parts.append(f'On its own turn ({html.escape(words)}) — <a href="message:{event.id}">show it</a>.')
        if change.step_id:
            call = cause.call
            name = call.function_name if call and call.function_name else "a function"
            link = f'<a href="message:{change.step_id}">show the call</a>'
            parts.append(f"Made by its call to {html.escape(name)} — {link}.")
        if change.note and not change.reverts:
            parts.append(html.escape(change.note[0].upper() + change.note[1:]) + ".")
        if not parts:
            parts.append(
                {"user": "Edited in the window or the terminal.", "agent": "By the agent."}.get(
                    change.source, f"By {who(change.source)}."
                )
            )
        return " ".join(parts)

    @Slot(QUrl)
    @reports_errors
    def on_link_clicked(self, url: QUrl) -> None:
        text = url.toString()
        if text.startswith("message:"):
            self.show_message_requested.emit(int(text.split(":", 1)[1]))

    @Slot()
    @reports_errors
    def on_show_clicked(self) -> None:
        change = self.selected()
        target = self.source_message(change) if change else None
        if target is not None:
            self.show_message_requested.emit(target)

    # --- revert and undo -------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_revert_clicked(self) -> None:
        change = self.selected()
        if change is not None:
            self.request_revert(change.id)

    @Slot()
    @reports_errors
    def on_undo_clicked(self) -> None:
        change = self.newest_revertible()
        if change is not None:
            self.request_revert(change.id)

    def request_revert(self, change_id: int) -> None:
        """Plan the revert and ask the user to confirm it in a dialog (non-blocking)."""
        try:
            plan = self.reverter.plan(change_id)
        except MemDeskError as error:
            self.failed.emit(error)
            return
        if not plan.possible:
            self.failed.emit(MemDeskError(plan.blocked or "This change cannot be reverted"))
            return
        if self.revert_dialog is not None:
            self.revert_dialog.close()
        self.revert_dialog = RevertDialog(plan, self.clock, self)
        self.revert_dialog.confirmed.connect(self.apply_revert)
        self.revert_dialog.open()

    @Slot(object)
    @reports_errors
    def apply_revert(self, plan: RevertPlan) -> None:
        try:
            # A conflict reached here only through "Revert anyway".
            change = self.reverter.apply(plan, force=plan.conflict)
        except StaleBlockError:
            self.failed.emit(
                MemDeskError("The memory changed again while you were deciding: look at the revert once more")
            )
            self.request_revert(plan.change.id)
            return
        except MemDeskError as error:
            self.failed.emit(error)
            return
        self._select_wanted = change.id
        self.refresh()
        self.changed.emit([change.label] if change.kind == BLOCK else [])
        if change.kind in GRAPH_KINDS:
            self.graph_changed.emit()
