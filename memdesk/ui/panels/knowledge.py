"""The Knowledge panel: what the knowledge graph holds, and the user's corrections to it.

Entities (with mentions and when last seen) with a filter; the selected entity's facts with their
dates, author and a source link that jumps to the message or passage; a small drawing of its
neighbourhood; rename, merge, split an alias off, delete, add and edit facts, each undoable
(Ctrl+Z in the panel). Reads and edits go through the GUI thread's store connection: they are
single small statements, and WAL lets them pass the extraction thread's writes.

With a ``reverter`` (the app's), every edit is in the memory history and Undo reverts the newest
edit not undone yet as a recorded change, so undo survives a restart and shows in the History
view; a conflict (the extractor changed the rows since) is reported, never overwritten. Without
one (a bare graph), undo is an in-memory stack.

Signals:
    source_requested(str, int): show a fact's source ("message" or "passage", its id)
    rebuild_requested(int): extract the agent's whole history again
    changed(): the user changed the graph (the prompt's top entities may change)
    failed(object): an error for the message bar
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QBrush, QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QInputDialog,
    QLineEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.base.errors import MemDeskError, RevertError
from memdesk.core.graph.render import source_label
from memdesk.core.graph.store import SELF_KIND, Edit, Entity, Fact, KnowledgeGraph
from memdesk.core.memory.graph_revert import GRAPH_KINDS
from memdesk.core.memory.history import USER, Change
from memdesk.core.memory.revert import Reverter
from memdesk.ui.common import palette, tables
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import escape, literal, plain_label, set_plain, set_rich
from memdesk.ui.panels.graph_view import GraphView

ENTITY_COLUMNS = ["Entity", "Kind", "Mentions", "Last seen"]
FACT_COLUMNS = ["Subject", "Relation", "Object", "From", "To", "By", "Source"]
ENTITY_LIMIT = 2000
#: Kinds as the panel names them: the user's own entity is "you", not the extractor's "self".
KIND_SHOWN = {SELF_KIND: "you"}


def shown_kind(kind: str) -> str:
    return KIND_SHOWN.get(kind, kind)


class KnowledgePanel(QWidget):
    source_requested = Signal(str, int)
    rebuild_requested = Signal(int)
    changed = Signal()
    failed = Signal(object)

    def __init__(
        self, graph: KnowledgeGraph, parent: QWidget | None = None, *, reverter: Reverter | None = None
    ) -> None:
        super().__init__(parent)
        self.graph = graph
        self.reverter = reverter
        self.agent_id: int | None = None
        self.entities: list[Entity] = []
        self.facts: list[Fact] = []
        self.current: Entity | None = None
        self.undo_stack: list[Edit] = []
        self.last_edit: Edit | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        self.filter_box = QLineEdit()
        self.filter_box.setPlaceholderText("Filter entities…")
        self.filter_box.setClearButtonEnabled(True)
        self.undo_button = QPushButton("Undo")
        self.undo_button.setToolTip("Undo the last change to the graph (Ctrl+Z)")
        self.rebuild_button = QPushButton("Rebuild")
        self.rebuild_button.setToolTip("Extract entities and facts from the whole history again (your own edits stay)")
        top.addWidget(self.filter_box, 1)
        top.addWidget(self.undo_button)
        top.addWidget(self.rebuild_button)
        layout.addLayout(top)
        self.status = plain_label()
        self.status.setStyleSheet(f"color: {palette.muted()}")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)

        splitter = QSplitter(Qt.Orientation.Vertical)
        self.entity_table = tables.table(ENTITY_COLUMNS, single=True)
        splitter.addWidget(self.entity_table)
        detail = QWidget()
        detail_layout = QVBoxLayout(detail)
        detail_layout.setContentsMargins(0, 0, 0, 0)
        self.title = plain_label("Select an entity to see what is known about it.")
        self.title.setWordWrap(True)
        detail_layout.addWidget(self.title)
        entity_row = QHBoxLayout()
        self.rename_button = QPushButton("Rename…")
        self.merge_button = QPushButton("Merge into…")
        self.split_button = QPushButton("Split alias…")
        self.delete_button = QPushButton("Delete")
        for button in (self.rename_button, self.merge_button, self.split_button, self.delete_button):
            entity_row.addWidget(button)
        detail_layout.addLayout(entity_row)
        self.fact_table = tables.table(FACT_COLUMNS, single=True)
        detail_layout.addWidget(self.fact_table, 1)
        fact_row = QHBoxLayout()
        self.add_fact_button = QPushButton("Add fact…")
        self.edit_fact_button = QPushButton("Edit relation…")
        self.end_fact_button = QPushButton("No longer true")
        self.delete_fact_button = QPushButton("Delete fact")
        for button in (self.add_fact_button, self.edit_fact_button, self.end_fact_button, self.delete_fact_button):
            fact_row.addWidget(button)
        detail_layout.addLayout(fact_row)
        splitter.addWidget(detail)
        self.view = GraphView()
        splitter.addWidget(self.view)
        layout.addWidget(splitter, 1)
        self.undo_shortcut = QShortcut(QKeySequence.StandardKey.Undo, self, self.undo)
        self.undo_shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self._connect_signals()
        self._update_buttons()

    def _connect_signals(self) -> None:
        self.filter_box.textChanged.connect(lambda _text: self.refresh())
        self.entity_table.itemSelectionChanged.connect(self.on_entity_selected)
        self.fact_table.itemSelectionChanged.connect(self._update_buttons)
        self.fact_table.cellActivated.connect(self.on_fact_activated)
        self.fact_table.cellClicked.connect(
            lambda row, column: column == FACT_COLUMNS.index("Source") and self.open_source(row)
        )
        self.view.entity_clicked.connect(self.select_entity)
        self.undo_button.clicked.connect(self.undo)
        self.rebuild_button.clicked.connect(self.on_rebuild_clicked)
        self.rename_button.clicked.connect(self.on_rename_clicked)
        self.merge_button.clicked.connect(self.on_merge_clicked)
        self.split_button.clicked.connect(self.on_split_clicked)
        self.delete_button.clicked.connect(lambda: self.delete_entity())
        self.add_fact_button.clicked.connect(self.on_add_fact_clicked)
        self.edit_fact_button.clicked.connect(self.on_edit_fact_clicked)
        self.end_fact_button.clicked.connect(lambda: self.end_fact())
        self.delete_fact_button.clicked.connect(lambda: self.delete_fact())

    # --- showing -----------------------------------------------------------------------------
    def set_agent(self, agent_id: int | None) -> None:
        self.agent_id = agent_id
        self.undo_stack.clear()
        self.current = None
        self.refresh()

    @Slot()
    @reports_errors
    def refresh(self) -> None:
        """Reload the entity list, keeping the selection."""
        keep = self.current.id if self.current is not None else None
        self.entities = (
            self.graph.entities(self.agent_id, text=self.filter_box.text(), limit=ENTITY_LIMIT) if self.agent_id else []
        )
        self.entity_table.blockSignals(True)
        self.entity_table.setRowCount(len(self.entities))
        for row, entity in enumerate(self.entities):
            seen = f"{entity.last_seen.astimezone():%Y-%m-%d %H:%M}" if entity.last_seen else "never"
            self.entity_table.setItem(
                row,
                0,
                tables.read_only_item(
                    entity.name + (f"  ({', '.join(entity.aliases)})" if entity.aliases else ""), entity.id
                ),
            )
            for column, text in enumerate((shown_kind(entity.kind), str(entity.mentions), seen), start=1):
                self.entity_table.setItem(row, column, tables.read_only_item(text))
        self.entity_table.blockSignals(False)
        if self.agent_id:
            entities, facts = self.graph.count(self.agent_id)
            self.status.setText(
                f"{entities} entities, {facts} current facts"
                if entities
                else "Nothing yet: entities and facts appear here as you talk and add documents."
            )
        self.select_entity(keep) if keep is not None and self._row_of(keep) is not None else self.show_entity(
            self.current if self.current is not None and not self._hidden(self.current.id) else None
        )

    def _hidden(self, entity_id: int) -> bool:
        try:
            return self.graph.entity(entity_id).deleted
        except MemDeskError:
            return True

    def _row_of(self, entity_id: int) -> int | None:
        return next((row for row, e in enumerate(self.entities) if e.id == entity_id), None)

    @Slot(int, int, int)
    @reports_errors
    def set_pending(self, agent_id: int, entities: int, facts: int) -> None:
        if agent_id == self.agent_id and (entities or facts):
            self.status.setText(self.status.text().split(" · ")[0] + f" · extracting: {entities + facts} waiting")

    @Slot()
    @reports_errors
    def on_entity_selected(self) -> None:
        rows = self.entity_table.selectionModel().selectedRows()
        if rows:
            self.show_entity(self.entities[rows[0].row()])

    @Slot(int)
    @reports_errors
    def select_entity(self, entity_id: int) -> None:
        root = self.graph.root(entity_id)
        row = self._row_of(root)
        if row is None and self.filter_box.text():
            self.filter_box.blockSignals(True)
            self.filter_box.clear()
            self.filter_box.blockSignals(False)
            self.refresh()
            row = self._row_of(root)
        if row is not None:
            self.entity_table.selectRow(row)
        self.show_entity(self.graph.entity(root))

    def show_entity(self, entity: Entity | None) -> None:
        self.current = entity
        self.facts = self.graph.facts(entity.id) if entity is not None else []
        if entity is None:
            set_plain(self.title, "Select an entity to see what is known about it.")
        else:
            aliases = f" · also called {escape(', '.join(entity.aliases))}" if entity.aliases else ""
            set_rich(
                self.title,
                f"<b>{escape(entity.name)}</b> ({escape(shown_kind(entity.kind))}) · {entity.mentions} mentions{aliases}",
            )
        self.fact_table.setRowCount(len(self.facts))
        for row, fact in enumerate(self.facts):
            values = [
                fact.subject,
                fact.relation,
                fact.object,
                f"{fact.valid_from.astimezone():%Y-%m-%d}",
                f"{fact.valid_to.astimezone():%Y-%m-%d}" if fact.valid_to else "now",
                fact.author,
            ]
            for column, text in enumerate(values):
                self.fact_table.setItem(row, column, tables.read_only_item(text, fact.id))
            link = tables.read_only_item(source_label(self.graph.db, fact) if fact.source() else "—", fact.id)
            if fact.source():
                link.setForeground(QBrush(QColor(palette.link())))
                font = link.font()
                font.setUnderline(True)
                link.setFont(font)
                link.setToolTip("Show where this came from")
            self.fact_table.setItem(row, len(values), link)
        _nodes, facts = self.graph.neighbourhood(entity.id, 1) if entity is not None else ([], [])
        self.view.show_neighbourhood(entity, facts)
        self._update_buttons()

    @Slot()
    @reports_errors
    def _update_buttons(self) -> None:
        has_entity = self.current is not None
        has_fact = self.selected_fact() is not None
        for button in (self.rename_button, self.merge_button, self.delete_button, self.add_fact_button):
            button.setEnabled(has_entity)
        self.split_button.setEnabled(has_entity and bool(self.current and self.current.aliases))
        for button in (self.edit_fact_button, self.end_fact_button, self.delete_fact_button):
            button.setEnabled(has_fact)
        if self.reverter is not None:
            change = self.next_undo()
            self.undo_button.setEnabled(change is not None)
            self.undo_button.setToolTip(literal(f"Undo: {change.describe()} (Ctrl+Z)") if change else "Nothing to undo")
            return
        self.undo_button.setEnabled(bool(self.undo_stack))
        self.undo_button.setToolTip(
            literal(f"Undo {self.undo_stack[-1].label} (Ctrl+Z)") if self.undo_stack else "Nothing to undo"
        )

    def next_undo(self) -> Change | None:
        """The recorded edit Undo takes back next: the user's newest graph change not undone yet."""
        if self.reverter is None or self.agent_id is None:
            return None
        return self.reverter.history.newest_unreverted(self.agent_id, GRAPH_KINDS, source=USER)

    def selected_fact(self) -> Fact | None:
        rows = self.fact_table.selectionModel().selectedRows()
        return self.facts[rows[0].row()] if rows and rows[0].row() < len(self.facts) else None

    # --- jumping to a source -----------------------------------------------------------------
    @Slot(int, int)
    @reports_errors
    def on_fact_activated(self, row: int, _column: int) -> None:
        self.open_source(row)

    def open_source(self, row: int) -> None:
        if 0 <= row < len(self.facts) and (source := self.facts[row].source()) is not None:
            self.source_requested.emit(*source)

    # --- edits (each undoable) ---------------------------------------------------------------
    def _apply(self, edit_function) -> bool:
        try:
            edit = edit_function()
        except MemDeskError as error:
            self.failed.emit(error)
            return False
        if self.reverter is None:
            self.undo_stack.append(edit)
        self.last_edit = edit
        self.refresh()
        self.changed.emit()
        return True

    @Slot()
    @reports_errors
    def undo(self) -> None:
        if self.reverter is not None:
            self._undo_recorded()
            return
        if not self.undo_stack:
            return
        edit = self.undo_stack.pop()
        try:
            self.graph.undo(edit)
        except MemDeskError as error:
            self.failed.emit(error)
        self.status.setText(f"Undone: {edit.label}")
        self.refresh()
        self.changed.emit()

    def _undo_recorded(self) -> None:
        change = self.next_undo()
        if change is None or self.reverter is None or self.agent_id is None:
            return
        try:
            self.reverter.undo_last_of(self.agent_id, GRAPH_KINDS, source=USER)
        except RevertError as error:
            # Never forced: the panel has no place to weigh a conflict, the History view shows
            # what the revert would overwrite.
            self.failed.emit(
                RevertError(
                    f"Cannot undo '{change.describe()}': {error.message}",
                    hint="open the Memory history (Ctrl+H) to look at it and revert it anyway",
                )
            )
            return
        except MemDeskError as error:
            self.failed.emit(error)
            return
        self.status.setText(f"Undone: {change.describe()}")
        self.refresh()
        self.changed.emit()

    def rename_entity(self, name: str, kind: str | None = None) -> bool:
        if self.current is None:
            return False
        entity_id = self.current.id
        return self._apply(lambda: self.graph.rename(entity_id, name, kind))

    def merge_into(self, target_name: str) -> bool:
        if self.current is None or self.agent_id is None:
            return False
        target = self.graph.find(self.agent_id, target_name)
        if target is None:
            self.failed.emit(MemDeskError(f"No entity named {target_name!r}"))
            return False
        source = self.current.id
        if self._apply(lambda: self.graph.merge(source, target.id)):
            self.select_entity(target.id)
            return True
        return False

    def split_alias(self, alias_name: str) -> bool:
        if self.current is None:
            return False
        alias = next((i for i, name in self.graph.alias_rows(self.current.id) if name == alias_name), None)
        if alias is None:
            return False
        return self._apply(lambda: self.graph.split(alias))

    def delete_entity(self) -> bool:
        if self.current is None:
            return False
        entity_id = self.current.id
        self.current = None
        done = self._apply(lambda: self.graph.delete_entity(entity_id))
        if done:
            self.status.setText(f"Deleted {self.last_edit.label[7:]} · Ctrl+Z brings it back")
        return done

    def add_fact(self, relation: str, other: str) -> bool:
        if self.current is None or self.agent_id is None:
            return False
        agent, subject = self.agent_id, self.current.name
        return self._apply(lambda: self.graph.insert_fact(agent, subject, relation, other, author="user")[1])

    def edit_relation(self, relation: str) -> bool:
        fact = self.selected_fact()
        return fact is not None and self._apply(lambda: self.graph.edit_fact(fact.id, relation=relation))

    def end_fact(self) -> bool:
        fact = self.selected_fact()
        now = self.graph.clock.now()
        return fact is not None and fact.current and self._apply(lambda: self.graph.edit_fact(fact.id, valid_to=now))

    def delete_fact(self) -> bool:
        fact = self.selected_fact()
        return fact is not None and self._apply(lambda: self.graph.delete_fact(fact.id))

    # --- dialogs -------------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_rename_clicked(self) -> None:
        if self.current is None:
            return
        name, ok = QInputDialog.getText(self, "Rename entity", "Name:", text=self.current.name)
        if ok and name.strip():
            self.rename_entity(name.strip())

    @Slot()
    @reports_errors
    def on_merge_clicked(self) -> None:
        if self.current is None:
            return
        choices = [e.name for e in self.graph.entities(self.agent_id, limit=ENTITY_LIMIT) if e.id != self.current.id]
        name, ok = QInputDialog.getItem(
            self, "Merge entity", literal(f"Merge {self.current.name} into:"), choices, 0, True
        )
        if ok and name:
            self.merge_into(name)

    @Slot()
    @reports_errors
    def on_split_clicked(self) -> None:
        if self.current is None or not self.current.aliases:
            return
        name, ok = QInputDialog.getItem(
            self, "Split alias", "Make this alias an entity of its own:", list(self.current.aliases), 0, False
        )
        if ok and name:
            self.split_alias(name)

    @Slot()
    @reports_errors
    def on_add_fact_clicked(self) -> None:
        if self.current is None:
            return
        relation, ok = QInputDialog.getText(
            self, "Add fact", literal(f"{self.current.name} … (relation, such as lives in):")
        )
        if not ok or not relation.strip():
            return
        other, ok = QInputDialog.getText(self, "Add fact", literal(f"{self.current.name} {relation.strip()} …:"))
        if ok and other.strip():
            self.add_fact(relation.strip(), other.strip())

    @Slot()
    @reports_errors
    def on_edit_fact_clicked(self) -> None:
        fact = self.selected_fact()
        if fact is None:
            return
        relation, ok = QInputDialog.getText(
            self, "Edit fact", literal(f"{fact.subject} … {fact.object}:"), text=fact.relation
        )
        if ok and relation.strip():
            self.edit_relation(relation.strip())

    @Slot()
    @reports_errors
    def on_rebuild_clicked(self) -> None:
        if self.agent_id is not None:
            self.status.setText("Rebuilding from the whole history…")
            self.rebuild_requested.emit(self.agent_id)
