"""Core memory editors: one per block, with a live character counter, read-only flag, save and
revert. Saves carry the version the editor loaded, so an edit the agent made meanwhile is never
silently overwritten: the user chooses to keep theirs or take the agent's. Each editor says who
changed the block last and when ("changed by the agent 2 min ago"), with that change's diff one
click away and the block's whole history a click further. The blocks and their last changes are
read off the GUI thread (through the panels' reads); a save is one statement on the GUI thread's
connection.

Signals (CoreMemoryPanel):
    changed(): the user changed core memory (the budget needs measuring again)
    loaded(): the blocks read last are shown
    failed(object): an error for the message bar
    history_requested(str): show the history of this block
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.base.clock import Clock, SystemClock
from memdesk.core.base.errors import MemDeskError
from memdesk.core.memory.core_memory import Block, CoreMemory, StaleBlockError
from memdesk.core.memory.history import Change
from memdesk.ui.common import palette
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import TextView, literal, plain_label
from memdesk.ui.panels.history_text import diff_html, relative_time, who
from memdesk.ui.workers.reads import Reads

AGE_REFRESH_MS = 30_000  # "2 min ago" stays true


def read_blocks(core: CoreMemory, agent_id: int, labels: list[str] | None = None) -> list[tuple[Block, Change | None]]:
    """The agent's blocks (or those of ``labels`` that exist), each with its last recorded change."""
    found = core.blocks(agent_id) if labels is None else [core.get(agent_id, label) for label in labels]
    return [(b, core.history.latest_for_block(agent_id, b.label)) for b in found if b is not None]


class BlockEditor(QGroupBox):
    """Signals:
    saved(object): the Block after a successful save
    remove_requested(str): the label
    history_requested(str): the label
    failed(object)
    """

    saved = Signal(object)
    remove_requested = Signal(str)
    history_requested = Signal(str)
    failed = Signal(object)

    def __init__(
        self,
        core: CoreMemory,
        block: Block,
        reads: Reads,
        last_change: Change | None,
        parent: QWidget | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        """``last_change``: the block's last recorded change, as read with it."""
        super().__init__(block.label, parent)
        self.core = core
        self.block = block
        self.reads = reads
        self.clock = clock or SystemClock()
        layout = QVBoxLayout(self)
        if block.description:
            description = plain_label(block.description)
            description.setWordWrap(True)  # a long description must not widen the narrow panel
            description.setStyleSheet(f"color: {palette.muted()}")
            layout.addWidget(description)
        changes = QHBoxLayout()
        self.last_change = plain_label()
        self.last_change.setWordWrap(True)
        self.last_change.setStyleSheet(f"color: {palette.muted()}; font-size: small")
        self.diff_button = QPushButton("Show change")
        self.diff_button.setCheckable(True)
        self.diff_button.setFlat(True)
        self.history_button = QPushButton("History…")
        self.history_button.setFlat(True)
        changes.addWidget(self.last_change, 1)
        changes.addWidget(self.diff_button)
        changes.addWidget(self.history_button)
        layout.addLayout(changes)
        self.diff_view = TextView()
        self.diff_view.setMaximumHeight(110)
        self.diff_view.hide()
        layout.addWidget(self.diff_view)
        self.editor = QPlainTextEdit(block.value)
        self.editor.setMinimumHeight(70)
        layout.addWidget(self.editor)
        self.conflict = QFrame()
        self.conflict.setStyleSheet(f"background: {palette.tint(palette.RED)}")
        conflict_row = QHBoxLayout(self.conflict)
        self.conflict_label = plain_label()
        self.conflict_label.setWordWrap(True)
        self.keep_mine = QPushButton("Keep mine")
        self.take_agents = QPushButton("Take the agent's")
        conflict_row.addWidget(self.conflict_label, 1)
        conflict_row.addWidget(self.keep_mine)
        conflict_row.addWidget(self.take_agents)
        self.conflict.hide()
        layout.addWidget(self.conflict)
        # The counter has a line of its own and the checkbox a short label: the block must fit the
        # narrow panel of a 1366-pixel-wide screen without a horizontal scroll bar.
        self.counter = QLabel()
        self.counter.setWordWrap(True)
        layout.addWidget(self.counter)
        row = QHBoxLayout()
        self.read_only = QCheckBox("Read-only")
        self.read_only.setToolTip("Read-only for the agent: it can read this block but not change it")
        self.read_only.setChecked(block.read_only)
        self.save_button = QPushButton("Save")
        self.revert_button = QPushButton("Revert")
        self.remove_button = QPushButton("Remove")
        row.addWidget(self.read_only, 1)
        for button in (self.save_button, self.revert_button, self.remove_button):
            row.addWidget(button)
        layout.addLayout(row)
        self._stale: Block | None = None
        self._connect_signals()
        self.on_text_changed()
        self.show_change(last_change)

    def show_last_change(self) -> None:
        """Read the block's last change again, then show it (``show_change``)."""
        history, agent_id, label = self.core.history, self.block.agent_id, self.block.label
        self.reads.load(
            (self, "last change"), lambda: history.latest_for_block(agent_id, label), self.show_change, self.failed.emit
        )

    @reports_errors
    def show_change(self, change: Change | None) -> None:
        """ "changed by the agent 2 min ago", and that change's diff behind "Show change"."""
        if change is None:
            self.last_change.setText("no recorded changes")
            self.diff_button.setEnabled(False)
            self.diff_view.hide()
            return
        verb = "reverted" if change.is_revert else ("created" if change.action == "create" else "changed")
        self.last_change.setText(f"{verb} by {who(change.source)} {relative_time(change.at, self.clock.now())}")
        self.last_change.setToolTip(literal(f"{change.describe()} at {change.at.astimezone():%Y-%m-%d %H:%M:%S}"))
        self.diff_button.setEnabled(change.action in ("create", "update"))
        self.diff_view.setHtml(diff_html(change.before, change.after))
        self.diff_view.setVisible(self.diff_button.isChecked() and self.diff_button.isEnabled())
        self.last_change_id = change.id

    def _connect_signals(self) -> None:
        self.diff_button.toggled.connect(lambda shown: self.diff_view.setVisible(shown))
        self.history_button.clicked.connect(lambda: self.history_requested.emit(self.block.label))
        self.editor.textChanged.connect(self.on_text_changed)
        self.save_button.clicked.connect(self.on_save_clicked)
        self.revert_button.clicked.connect(self.on_revert_clicked)
        self.remove_button.clicked.connect(lambda: self.remove_requested.emit(self.block.label))
        self.read_only.toggled.connect(self.on_read_only_toggled)
        self.keep_mine.clicked.connect(self.on_keep_mine_clicked)
        self.take_agents.clicked.connect(self.on_take_agents_clicked)

    @property
    def dirty(self) -> bool:
        return self.editor.toPlainText() != self.block.value

    @Slot()
    @reports_errors
    def on_text_changed(self) -> None:
        chars = len(self.editor.toPlainText())
        over = chars > self.block.limit
        self.counter.setText(
            f"{chars} / {self.block.limit} characters"
            + (" — over the limit" if over else "")
            + (" · edited" if self.dirty else "")
        )
        self.counter.setStyleSheet(
            f"color: {palette.readable(palette.RED)}; font-weight: bold" if over else f"color: {palette.muted()}"
        )
        self.save_button.setEnabled(self.dirty and not over)
        self.revert_button.setEnabled(self.dirty)

    def agent_changed(self, block: Block, change: Change | None) -> None:
        """The agent edited this block (``change``, its last): show it, unless the user is mid-edit
        (then Save will ask)."""
        if not self.dirty:
            self.block = block
            self.editor.setPlainText(block.value)
        self.show_change(change)
        self.setStyleSheet(f"QGroupBox {{ background: {palette.tint(palette.YELLOW)}; }}")
        QTimer.singleShot(4000, self, self.clear_highlight)  # the context object cancels it if the editor goes

    @Slot()
    @reports_errors
    def clear_highlight(self) -> None:
        self.setStyleSheet("")

    @Slot()
    @reports_errors
    def on_save_clicked(self) -> None:
        self._save(self.block.version)

    def _save(self, expected_version: int) -> None:
        try:
            block = self.core.set_value(
                self.block.agent_id, self.block.label, self.editor.toPlainText(), expected_version=expected_version
            )
        except StaleBlockError as error:
            self._stale = error.current
            self.conflict_label.setText(f"{error.user_message}. Their version:\n{error.current.value[:300]}")
            self.conflict.show()
            self.show_last_change()
            self.diff_button.setChecked(True)  # what they changed, as a diff
            return
        except MemDeskError as error:
            self.failed.emit(error)
            return
        self.conflict.hide()
        self._stale = None
        self.block = block
        self.on_text_changed()
        self.show_last_change()
        self.saved.emit(block)

    @Slot()
    @reports_errors
    def on_keep_mine_clicked(self) -> None:
        if self._stale is not None:
            self._save(self._stale.version)

    @Slot()
    @reports_errors
    def on_take_agents_clicked(self) -> None:
        if self._stale is not None:
            self.block = self._stale
            self.editor.setPlainText(self._stale.value)
            self._stale = None
        self.conflict.hide()

    @Slot()
    @reports_errors
    def on_revert_clicked(self) -> None:
        """Back to the stored text (the agent may have changed it since it was shown)."""
        core, agent_id, label = self.core, self.block.agent_id, self.block.label
        self.reads.load((self, "stored"), lambda: core.get(agent_id, label), self._revert_to, self.failed.emit)

    @reports_errors
    def _revert_to(self, stored: Block | None) -> None:
        current = stored or self.block
        self.block = current
        self.editor.setPlainText(current.value)
        self.conflict.hide()

    @Slot(bool)
    @reports_errors
    def on_read_only_toggled(self, read_only: bool) -> None:
        try:
            self.block = self.core.configure(self.block.agent_id, self.block.label, read_only=read_only)
        except MemDeskError as error:
            self.failed.emit(error)
            return
        self.show_last_change()
        self.saved.emit(self.block)


class CoreMemoryPanel(QWidget):
    changed = Signal()
    loaded = Signal()
    failed = Signal(object)
    history_requested = Signal(str)

    def __init__(
        self, core: CoreMemory, reads: Reads, parent: QWidget | None = None, *, clock: Clock | None = None
    ) -> None:
        super().__init__(parent)
        self.core = core
        self.reads = reads
        self.clock = clock or SystemClock()
        self.age_timer = QTimer(self)
        self.age_timer.timeout.connect(self.refresh_changes)
        self.age_timer.start(AGE_REFRESH_MS)
        self.agent_id: int | None = None
        self.editors: dict[str, BlockEditor] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        # The blocks follow the panel's width (text wraps); only their height scrolls.
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll_area = scroll
        holder = QWidget()
        self.blocks_layout = QVBoxLayout(holder)
        self.blocks_layout.addStretch(1)
        scroll.setWidget(holder)
        layout.addWidget(scroll, 1)
        self.add_button = QPushButton("Add block…")
        layout.addWidget(self.add_button)
        self.add_button.clicked.connect(self.on_add_clicked)

    def set_agent(self, agent_id: int | None) -> None:
        self.agent_id = agent_id
        for editor in self.editors.values():
            self._drop_editor(editor)
        self.editors.clear()
        self.reload()

    @Slot()
    @reports_errors
    def refresh_changes(self) -> None:
        """Ages and last changes again (a revert elsewhere, or just time passing)."""
        agent_id, history, labels = self.agent_id, self.core.history, list(self.editors)
        if agent_id is None or not labels:
            return
        self.reads.load(
            (self, "changes"),
            lambda: {label: history.latest_for_block(agent_id, label) for label in labels},
            lambda changes: self._show_changes(agent_id, changes),
            self.failed.emit,
        )

    def _show_changes(self, agent_id: int, changes: dict[str, Change | None]) -> None:
        if agent_id == self.agent_id:
            for label, change in changes.items():
                if label in self.editors:
                    self.editors[label].show_change(change)

    def reload(self, labels: list[str] | None = None) -> None:
        """A change made outside the editors (a revert): take the stored text unless mid-edit."""
        agent_id, core = self.agent_id, self.core
        if agent_id is None:
            return
        self.reads.load(
            (self, "blocks"),
            lambda: read_blocks(core, agent_id),
            lambda blocks: self._show_blocks(agent_id, blocks, labels),
            self.failed.emit,
        )

    @reports_errors
    def _show_blocks(self, agent_id: int, blocks: list[tuple[Block, Change | None]], labels: list[str] | None) -> None:
        if agent_id != self.agent_id:
            return
        stored = {block.label: (block, change) for block, change in blocks}
        for label in list(self.editors):
            if label not in stored:
                self._drop_editor(self.editors.pop(label))
        for label, (block, change) in stored.items():
            editor = self.editors.get(label)
            if editor is None:
                self._add_editor(block, change)
            elif labels is None or label in labels:
                if not editor.dirty:
                    editor.block = block
                    editor.editor.setPlainText(block.value)
                    editor.read_only.blockSignals(True)
                    editor.read_only.setChecked(block.read_only)
                    editor.read_only.blockSignals(False)
                editor.show_change(change)
        self.loaded.emit()

    def _add_editor(self, block: Block, last_change: Change | None) -> None:
        editor = BlockEditor(self.core, block, self.reads, last_change, clock=self.clock)
        editor.saved.connect(lambda _block: self.changed.emit())
        editor.history_requested.connect(self.history_requested)
        editor.failed.connect(self.failed)
        editor.remove_requested.connect(self.on_remove_requested)
        self.blocks_layout.insertWidget(self.blocks_layout.count() - 1, editor)
        self.editors[block.label] = editor

    @Slot(list)
    @reports_errors
    def on_agent_changed_blocks(self, labels: list[str]) -> None:
        agent_id, core = self.agent_id, self.core
        if agent_id is None:
            return
        self.reads.load(
            (self, "agent changed", tuple(labels)),
            lambda: read_blocks(core, agent_id, labels),
            lambda blocks: self._show_agent_changes(agent_id, blocks),
            self.failed.emit,
        )

    @reports_errors
    def _show_agent_changes(self, agent_id: int, blocks: list[tuple[Block, Change | None]]) -> None:
        if agent_id != self.agent_id:
            return
        for block, change in blocks:
            if block.label in self.editors:
                self.editors[block.label].agent_changed(block, change)
            else:
                self._add_editor(block, change)

    @Slot()
    @reports_errors
    def on_add_clicked(self) -> None:
        if self.agent_id is None:
            return
        label, ok = QInputDialog.getText(self, "New memory block", "Label (letters, digits, underscores):")
        if ok and label.strip():
            self.add_block(label)

    def add_block(self, label: str, value: str = "") -> None:
        if self.agent_id is None:
            return
        try:
            block = self.core.create(self.agent_id, label, value, description="Added by the user.")
        except MemDeskError as error:
            self.failed.emit(error)
            return
        self._add_editor(block, None)
        self.editors[block.label].show_last_change()  # its creation, as recorded
        self.changed.emit()

    @Slot(str)
    @reports_errors
    def on_remove_requested(self, label: str) -> None:
        answer = QMessageBox.question(
            self, "Remove block", literal(f"Remove the {label} block? The agent will no longer see it.")
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.remove_block(label)

    def remove_block(self, label: str) -> None:
        if self.agent_id is None:
            return
        self.core.delete(self.agent_id, label)
        editor = self.editors.pop(label, None)
        if editor is not None:
            self._drop_editor(editor)
        self.changed.emit()

    def _drop_editor(self, editor: BlockEditor) -> None:
        # Hidden first: a parentless visible widget would flash up as its own window.
        editor.hide()
        self.blocks_layout.removeWidget(editor)
        editor.deleteLater()
