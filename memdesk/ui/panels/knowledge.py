"""The Knowledge panel: what the knowledge graph holds, and the user's corrections to it.

Entities (with mentions and when last seen) with a filter; the selected entity's facts with their
dates, author and a source link that jumps to the message or passage; a small drawing of its
neighbourhood; rename, merge, split an alias off, delete, add and edit facts, each undoable
(Ctrl+Z in the panel; knowledge_edits.py). What it shows is read off the GUI thread
(knowledge_reads.py, through the panels' reads).

Signals:
    source_requested(str, int): show a fact's source ("message" or "passage", its id)
    rebuild_requested(int): extract the agent's whole history again
    changed(): the user changed the graph (the prompt's top entities may change)
    loaded(): what was read last is shown
    failed(object): an error for the message bar
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QBrush, QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QLineEdit, QPushButton, QSplitter, QVBoxLayout, QWidget

from memdesk.core.graph.store import SELF_KIND, Entity, Fact, KnowledgeGraph
from memdesk.core.memory.history import Change
from memdesk.core.memory.revert import Reverter
from memdesk.ui.common import palette, tables
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import escape, literal, plain_label, set_plain, set_rich
from memdesk.ui.panels.graph_view import GraphView
from memdesk.ui.panels.knowledge_edits import KnowledgeEdits
from memdesk.ui.panels.knowledge_reads import EntityList, EntityView, read_entity, read_list
from memdesk.ui.workers.reads import Reads

ENTITY_COLUMNS = ["Entity", "Kind", "Mentions", "Last seen"]
FACT_COLUMNS = ["Subject", "Relation", "Object", "From", "To", "By", "Source"]
#: Kinds as the panel names them: the user's own entity is "you", not the extractor's "self".
KIND_SHOWN = {SELF_KIND: "you"}
NOTHING_SELECTED = "Select an entity to see what is known about it."


def shown_kind(kind: str) -> str:
    return KIND_SHOWN.get(kind, kind)


class KnowledgePanel(QWidget):
    source_requested = Signal(str, int)
    rebuild_requested = Signal(int)
    changed = Signal()
    loaded = Signal()
    failed = Signal(object)

    def __init__(
        self,
        graph: KnowledgeGraph,
        reads: Reads,
        parent: QWidget | None = None,
        *,
        reverter: Reverter | None = None,
    ) -> None:
        super().__init__(parent)
        self.graph = graph
        self.reads = reads
        self.reverter = reverter
        self.agent_id: int | None = None
        self.entities: list[Entity] = []
        self.facts: list[Fact] = []
        self.current: Entity | None = None  # the entity whose facts are shown
        self._wanted: int | None = None  # the entity asked for last (shown once read)
        self._next_undo: Change | None = None  # as read with the list
        self._note = ""  # what an edit said, shown in the status line instead of the totals once
        self._reveal = False  # the entity asked for is shown even if the filter hid it
        self.edits = KnowledgeEdits(graph, reverter, self, self)
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
        self.undo_shortcut = QShortcut(QKeySequence.StandardKey.Undo, self, self.edits.undo)
        self.undo_shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self._connect_signals()
        self._update_buttons()

    def _connect_signals(self) -> None:
        self.filter_box.textChanged.connect(lambda _text: self.refresh())
        self.entity_table.itemSelectionChanged.connect(self.on_entity_selected)
        self.fact_table.itemSelectionChanged.connect(self._update_buttons)
        self.fact_table.cellActivated.connect(self.on_fact_activated)
        self.fact_table.cellClicked.connect(self.on_fact_clicked)
        self.view.entity_clicked.connect(self.select_entity)
        edits = self.edits
        self.undo_button.clicked.connect(edits.undo)
        self.rebuild_button.clicked.connect(self.on_rebuild_clicked)
        self.rename_button.clicked.connect(edits.on_rename_clicked)
        self.merge_button.clicked.connect(edits.on_merge_clicked)
        self.split_button.clicked.connect(edits.on_split_clicked)
        self.delete_button.clicked.connect(lambda: edits.delete_entity())
        self.add_fact_button.clicked.connect(edits.on_add_fact_clicked)
        self.edit_fact_button.clicked.connect(edits.on_edit_fact_clicked)
        self.end_fact_button.clicked.connect(lambda: edits.end_fact())
        self.delete_fact_button.clicked.connect(lambda: edits.delete_fact())
        edits.applied.connect(self.on_edited)
        edits.select_requested.connect(self.select_entity)
        edits.failed.connect(self.failed)

    # --- the list ----------------------------------------------------------------------------
    def set_agent(self, agent_id: int | None) -> None:
        self.agent_id = agent_id
        self.edits.forget_undo()
        self._wanted = None
        self.show_view(None)
        self.refresh()

    @Slot()
    @reports_errors
    def refresh(self) -> None:
        """Read the entity list again, keeping the entity shown."""
        graph, reverter, agent_id, text, wanted = (
            self.graph,
            self.reverter,
            self.agent_id,
            self.filter_box.text(),
            self._wanted,
        )
        self.reads.load(
            (self, "list"),
            lambda: read_list(graph, reverter, agent_id, text, wanted),
            self._show_list,
            self.failed.emit,
        )

    @reports_errors
    def _show_list(self, listed: EntityList) -> None:
        if listed.agent_id != self.agent_id:
            return
        self.entities = listed.entities
        self._next_undo = listed.next_undo
        self.entity_table.blockSignals(True)
        self.entity_table.clearSelection()
        self.entity_table.setRowCount(len(self.entities))
        for row, entity in enumerate(self.entities):
            seen = f"{entity.last_seen.astimezone():%Y-%m-%d %H:%M}" if entity.last_seen else "never"
            aliases = f"  ({', '.join(entity.aliases)})" if entity.aliases else ""
            self.entity_table.setItem(row, 0, tables.read_only_item(entity.name + aliases, entity.id))
            for column, text in enumerate((shown_kind(entity.kind), str(entity.mentions), seen), start=1):
                self.entity_table.setItem(row, column, tables.read_only_item(text))
        self.entity_table.blockSignals(False)
        if self.agent_id:
            entities, facts = listed.totals
            totals = (
                f"{entities} entities, {facts} current facts"
                if entities
                else "Nothing yet: entities and facts appear here as you talk and add documents."
            )
            self.status.setText(self._note or totals)
        self._note = ""
        if self._wanted is None or listed.shown_gone:
            self._wanted = None
            self.show_view(None)
            self.loaded.emit()
        else:
            self._select_row(self._wanted)
            self._load_view(self._wanted)  # its facts may have changed too

    def _row_of(self, entity_id: int) -> int | None:
        return next((row for row, e in enumerate(self.entities) if e.id == entity_id), None)

    def _select_row(self, entity_id: int) -> None:
        row = self._row_of(entity_id)
        self.entity_table.blockSignals(True)
        if row is None:
            self.entity_table.clearSelection()
        else:
            self.entity_table.selectRow(row)
        self.entity_table.blockSignals(False)

    @Slot(int, int, int)
    @reports_errors
    def set_pending(self, agent_id: int, entities: int, facts: int) -> None:
        if agent_id == self.agent_id and (entities or facts):
            self.status.setText(self.status.text().split(" · ")[0] + f" · extracting: {entities + facts} waiting")

    # --- one entity --------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_entity_selected(self) -> None:
        rows = self.entity_table.selectionModel().selectedRows()
        if rows and rows[0].row() < len(self.entities):
            self.show_entity(self.entities[rows[0].row()])

    @Slot(int)
    @reports_errors
    def select_entity(self, entity_id: int) -> None:
        """Show this entity (the one it was merged into, for an alias), selected in the list; the
        filter is cleared when it hides it."""
        self._wanted = entity_id
        self._reveal = True
        self._load_view(entity_id)

    def show_entity(self, entity: Entity | None) -> None:
        if entity is None:
            self._wanted = None
            self.show_view(None)
        else:
            self.select_entity(entity.id)

    def _load_view(self, entity_id: int) -> None:
        graph = self.graph
        self.reads.load((self, "entity"), lambda: read_entity(graph, entity_id), self.show_view, self.failed.emit)

    @reports_errors
    def show_view(self, view: EntityView | None) -> None:
        """Show one entity as read (knowledge_reads.read_entity), or none."""
        entity = view.entity if view is not None else None
        reveal, self._reveal = self._reveal, False
        if entity is not None:
            self._wanted = entity.id  # an alias leads to its entity
            if reveal and self._row_of(entity.id) is None and self.filter_box.text():
                self.filter_box.blockSignals(True)
                self.filter_box.clear()
                self.filter_box.blockSignals(False)
                self.refresh()  # the list without the filter, then this entity again
                return
            self._select_row(entity.id)
        self.current = entity
        self.facts = view.facts if view is not None else []
        if entity is None:
            set_plain(self.title, NOTHING_SELECTED)
        else:
            aliases = f" · also called {escape(', '.join(entity.aliases))}" if entity.aliases else ""
            kind = escape(shown_kind(entity.kind))
            set_rich(self.title, f"<b>{escape(entity.name)}</b> ({kind}) · {entity.mentions} mentions{aliases}")
        self.fact_table.setRowCount(len(self.facts))
        sources = view.sources if view is not None else []
        for row, (fact, source) in enumerate(zip(self.facts, sources, strict=True)):
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
            link = tables.read_only_item(source or "—", fact.id)
            if source:
                link.setForeground(QBrush(QColor(palette.link())))
                font = link.font()
                font.setUnderline(True)
                link.setFont(font)
                link.setToolTip("Show where this came from")
            self.fact_table.setItem(row, len(values), link)
        self.view.show_neighbourhood(entity, view.neighbourhood if view is not None else [])
        self._update_buttons()
        if view is not None:
            self.loaded.emit()

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
            change = self._next_undo
            self.undo_button.setEnabled(change is not None)
            self.undo_button.setToolTip(literal(f"Undo: {change.describe()} (Ctrl+Z)") if change else "Nothing to undo")
            return
        stack = self.edits.undo_stack
        self.undo_button.setEnabled(bool(stack))
        self.undo_button.setToolTip(literal(f"Undo {stack[-1].label} (Ctrl+Z)") if stack else "Nothing to undo")

    def selected_fact(self) -> Fact | None:
        rows = self.fact_table.selectionModel().selectedRows()
        return self.facts[rows[0].row()] if rows and rows[0].row() < len(self.facts) else None

    # --- jumping to a source -----------------------------------------------------------------
    @Slot(int, int)
    @reports_errors
    def on_fact_activated(self, row: int, _column: int) -> None:
        self.open_source(row)

    @Slot(int, int)
    @reports_errors
    def on_fact_clicked(self, row: int, column: int) -> None:
        if column == FACT_COLUMNS.index("Source"):  # the link
            self.open_source(row)

    def open_source(self, row: int) -> None:
        if 0 <= row < len(self.facts) and (source := self.facts[row].source()) is not None:
            self.source_requested.emit(*source)

    # --- after an edit -----------------------------------------------------------------------
    @Slot(str)
    @reports_errors
    def on_edited(self, note: str) -> None:
        self._note = note
        self.refresh()
        self.changed.emit()

    @Slot()
    @reports_errors
    def on_rebuild_clicked(self) -> None:
        if self.agent_id is not None:
            self.status.setText("Rebuilding from the whole history…")
            self.rebuild_requested.emit(self.agent_id)
