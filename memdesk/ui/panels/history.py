"""The memory history: every change to an agent's memory with who made it, when, a readable diff
and what caused it (one click shows the message in the conversation, evicted or not), and
Revert/Undo, which are themselves recorded changes. When the agent changed the same text since,
the revert is shown as a conflict and needs the user's confirmation; nothing is overwritten
silently.

Signals (HistoryView):
    show_message_requested(int): show this message in the conversation
    changed(list): a revert changed memory (the labels of the blocks it touched)
    graph_changed(): a revert changed the knowledge graph
    failed(object): an error for the message bar
"""

from __future__ import annotations

import html
from datetime import datetime

from PySide6.QtCore import Qt, QUrl, Signal, Slot
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
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

from memdesk.core.base.clock import Clock
from memdesk.core.base.errors import MemDeskError
from memdesk.core.graph.store import KnowledgeGraph
from memdesk.core.memory.archival import ArchivalMemory
from memdesk.core.memory.core_memory import CoreMemory, StaleBlockError
from memdesk.core.memory.diff import DELETE, INSERT, segments, size_change
from memdesk.core.memory.graph_revert import GRAPH_KINDS
from memdesk.core.memory.history import BLOCK, DOCUMENT, GRAPH_ENTITY, GRAPH_FACT, PASSAGE, Change
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.memory.revert import Reverter, RevertPlan
from memdesk.ui.common import palette
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import TextView, literal, plain_label

WHO = {
    "agent": "the agent",
    "user": "you",
    "import": "an import",
    "consolidation": "memory consolidation",
    "extractor": "the knowledge extractor",
    "app": "MemDesk",
}
ALL, BLOCKS, PASSAGES, DOCUMENTS, GRAPH, FACTS, ENTITIES = (
    "all",
    "blocks",
    "passages",
    "documents",
    "graph",
    "graph_facts",
    "graph_entities",
)
#: The scopes above that are one kind of change.
SCOPE_KINDS = {BLOCKS: BLOCK, PASSAGES: PASSAGE, DOCUMENTS: DOCUMENT, FACTS: GRAPH_FACT, ENTITIES: GRAPH_ENTITY}
COLUMNS = ["When", "Who", "Change", "Size"]


def relative_time(moment: datetime, now: datetime) -> str:
    """ "just now", "2 min ago", "3 h ago", "yesterday", "12 days ago"."""
    seconds = max(0, int((now - moment).total_seconds()))
    if seconds < 45:
        return "just now"
    if seconds < 3600:
        return f"{max(1, round(seconds / 60))} min ago"
    if seconds < 86400:
        return f"{round(seconds / 3600)} h ago"
    days = seconds // 86400
    return "yesterday" if days == 1 else f"{days} days ago"


def who(source: str) -> str:
    return WHO.get(source, source)


def diff_html(before: str | None, after: str | None) -> str:
    """Word-level diff: removed text struck through in red, added text in green."""
    if before is None and after is None:
        return f'<p style="color:{palette.muted()}">(no text)</p>'
    parts = []
    for operation, text in segments(before or "", after or ""):
        escaped = html.escape(text).replace("\n", "<br>")
        if operation == INSERT:
            parts.append(
                f'<span style="background:{palette.tint(palette.GREEN)};color:{palette.readable(palette.GREEN)}">{escaped}</span>'
            )
        elif operation == DELETE:
            parts.append(
                f'<span style="background:{palette.tint(palette.RED)};color:{palette.readable(palette.RED)};text-decoration:line-through">{escaped}</span>'
            )
        else:
            parts.append(escaped)
    return f'<p style="font-family:monospace;white-space:pre-wrap">{"".join(parts) or "(empty)"}</p>'


class RevertDialog(QDialog):
    """Shows what a revert will do (and what it would overwrite) before it happens.

    Signals:
        confirmed(object): the RevertPlan the user confirmed
    """

    confirmed = Signal(object)

    def __init__(self, plan: RevertPlan, clock: Clock, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plan = plan
        self.setWindowTitle("Revert a memory change")
        self.resize(560, 420)
        layout = QVBoxLayout(self)
        self.explanation = plain_label(plan.explain())
        self.explanation.setWordWrap(True)
        if plan.conflict:
            self.explanation.setStyleSheet(f"background:{palette.tint(palette.RED)};padding:6px")
        layout.addWidget(self.explanation)
        if plan.later:
            now = clock.now()
            lines = "".join(
                f"<li>{html.escape(who(c.source))}: {html.escape(c.describe())} · {relative_time(c.at, now)}</li>"
                for c in plan.later
            )
            self.later = QLabel(f"<b>Changed since:</b><ul>{lines}</ul>")
            self.later.setWordWrap(True)
            layout.addWidget(self.later)
        layout.addWidget(QLabel("What the memory will hold (red: removed, green: added):"))
        self.preview = TextView()
        self.preview.setHtml(diff_html(plan.current, plan.result))
        layout.addWidget(self.preview, 1)
        buttons = QDialogButtonBox()
        self.revert_button = buttons.addButton(
            "Revert anyway" if plan.conflict else "Revert", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.cancel_button = buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.on_accepted)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    @Slot()
    @reports_errors
    def on_accepted(self) -> None:
        self.accept()
        self.confirmed.emit(self.plan)


class HistoryView(QWidget):
    show_message_requested = Signal(int)
    changed = Signal(list)
    graph_changed = Signal()
    failed = Signal(object)

    def __init__(
        self,
        core: CoreMemory,
        archival: ArchivalMemory,
        recall: RecallMemory,
        clock: Clock,
        parent: QWidget | None = None,
        *,
        graph: KnowledgeGraph | None = None,
    ) -> None:
        """With ``graph``, knowledge-graph changes can be reverted here too."""
        super().__init__(parent)
        self.core = core
        self.recall = recall
        self.clock = clock
        self.history = core.history
        self.reverter = Reverter(core.history, core, archival, graph)
        self.agent_id: int | None = None
        self.changes: list[Change] = []
        self.revert_dialog: RevertDialog | None = None
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
        self.scope.currentIndexChanged.connect(lambda _index: self.refresh())
        self.table.itemSelectionChanged.connect(self.on_selection_changed)
        self.details.anchorClicked.connect(self.on_link_clicked)
        self.show_button.clicked.connect(self.on_show_clicked)
        self.revert_button.clicked.connect(self.on_revert_clicked)
        self.undo_button.clicked.connect(self.on_undo_clicked)
        self._update_buttons()

    # --- what is shown ---------------------------------------------------------------------
    def set_agent(self, agent_id: int | None) -> None:
        self.agent_id = agent_id
        self._fill_scopes()
        self.refresh()

    def show_block(self, label: str) -> None:
        """The history of one core memory block."""
        self._fill_scopes()
        index = self.scope.findData(f"block:{label}")
        if index >= 0:
            self.scope.setCurrentIndex(index)
        self.refresh()
        if self.changes:
            self.table.selectRow(0)

    def _fill_scopes(self) -> None:
        current = self.scope.currentData()
        self.scope.blockSignals(True)
        self.scope.clear()
        for text, data in (
            ("All memory", ALL),
            ("Core memory blocks", BLOCKS),
            ("Archival passages", PASSAGES),
            ("Documents", DOCUMENTS),
            ("Knowledge graph", GRAPH),
            ("Knowledge graph: facts", FACTS),
            ("Knowledge graph: entities", ENTITIES),
        ):
            self.scope.addItem(text, data)
        if self.agent_id is not None:
            labels = [b.label for b in self.core.blocks(self.agent_id)]
            labels += sorted(
                {c.label for c in self.history.for_agent(self.agent_id, kind=BLOCK, limit=1000)} - set(labels)
            )
            for label in labels:
                self.scope.addItem(f"Block: {label}", f"block:{label}")
        index = self.scope.findData(current)
        self.scope.setCurrentIndex(max(0, index))
        self.scope.blockSignals(False)

    @Slot()
    @reports_errors
    def refresh(self) -> None:
        selected = self.selected()
        scope = self.scope.currentData() or ALL
        if self.agent_id is None:
            self.changes = []
        elif scope.startswith("block:"):
            self.changes = self.history.for_block(self.agent_id, scope.split(":", 1)[1])
        elif scope == GRAPH:
            facts = self.history.for_agent(self.agent_id, kind=GRAPH_FACT, limit=500)
            entities = self.history.for_agent(self.agent_id, kind=GRAPH_ENTITY, limit=500)
            self.changes = sorted(facts + entities, key=lambda c: -c.id)[:500]
        else:
            self.changes = self.history.for_agent(self.agent_id, kind=SCOPE_KINDS.get(scope), limit=500)
        now = self.clock.now()
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
        self.empty.setVisible(not self.changes)
        self.table.setVisible(bool(self.changes))
        self.details.setVisible(bool(self.changes))
        if selected is not None:
            for row, change in enumerate(self.changes):
                if change.id == selected.id:
                    self.table.selectRow(row)
                    break
        self.on_selection_changed()

    def selected(self) -> Change | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        return self.changes[rows[0].row()] if rows and rows[0].row() < len(self.changes) else None

    def select_change(self, change_id: int) -> None:
        for row, change in enumerate(self.changes):
            if change.id == change_id:
                self.table.selectRow(row)
                return

    @Slot()
    @reports_errors
    def on_selection_changed(self) -> None:
        change = self.selected()
        self.details.setHtml(self.describe(change) if change else "")
        self._update_buttons()

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

    def describe(self, change: Change) -> str:
        now = self.clock.now()
        title = html.escape(change.describe())
        lines = [f"<p><b>{title}</b> · {change.at.astimezone():%Y-%m-%d %H:%M} ({relative_time(change.at, now)})</p>"]
        lines.append(f"<p>{self._cause_html(change)}</p>")
        if change.action == "configure":
            before, after = change.before_meta or {}, change.after_meta or {}
            settings = ", ".join(
                f"{key}: {before.get(key)!r} → {after.get(key)!r}" for key in after if before.get(key) != after.get(key)
            )
            lines.append(f"<p>Settings: {html.escape(settings)}</p>")
        else:
            lines.append(diff_html(change.before, change.after))
        return "".join(lines)

    def _cause_html(self, change: Change) -> str:
        parts = []
        if change.reverts:
            parts.append(f"Reverts change #{change.reverts}.")
        event = self.recall.get(change.message_id) if change.message_id else None
        trigger = None
        if event is not None and event.kind == "user_message":
            trigger = event
        elif event is not None and event.kind == "heartbeat" and "Timed heartbeat" not in event.content:
            trigger = self.recall.last_of_kind(
                change.agent_id, "user_message", event.id
            )  # a chain the user's message started
        if trigger is not None:
            said = trigger.search_text.strip().replace("\n", " ")
            said = said if len(said) <= 80 else said[:79] + "…"
            parts.append(
                f'Answering your message “{html.escape(said)}” — <a href="message:{trigger.id}">show it in the conversation</a>.'
            )
        elif event is not None:
            what = "a timed heartbeat" if event.kind == "heartbeat" else f"a {event.kind.replace('_', ' ')}"
            parts.append(f'While answering {what} — <a href="message:{event.id}">show it</a>.')
        if change.step_id:
            call = self.recall.get(change.step_id)
            name = call.function_name if call and call.function_name else "a function"
            parts.append(
                f'Made by its call to {html.escape(name)} — <a href="message:{change.step_id}">show the call</a>.'
            )
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
            change = self.reverter.apply(
                plan, force=plan.conflict
            )  # a conflict reached here only through "Revert anyway"
        except StaleBlockError:
            self.failed.emit(
                MemDeskError("The memory changed again while you were deciding: look at the revert once more")
            )
            self.request_revert(plan.change.id)
            return
        except MemDeskError as error:
            self.failed.emit(error)
            return
        self.refresh()
        self.select_change(change.id)
        self.changed.emit([change.label] if change.kind == BLOCK else [])
        if change.kind in GRAPH_KINDS:
            self.graph_changed.emit()
