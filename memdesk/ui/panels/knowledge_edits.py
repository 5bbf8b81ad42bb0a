"""The user's corrections to the knowledge graph, from the Knowledge panel: rename, merge, split an
alias off, delete, add a fact, edit its relation, end it, delete it, each asked for in a small
dialog and each undoable.

With a ``reverter`` (the app's), every edit is in the memory history and Undo reverts the newest
edit not undone yet as a recorded change, so undo survives a restart and shows in the History
view; a conflict (the extractor changed the rows since) is reported, never overwritten. Without
one (a bare graph), undo is an in-memory stack. An edit is one small statement on the GUI
thread's connection (WAL lets it pass the extraction thread's writes); what the panel then shows
is read again off the GUI thread.

Signals:
    applied(str): an edit or an undo took effect; a note for the panel's status line ("" for none)
    select_requested(int): show this entity (the one a merge went into)
    failed(object): an error for the message bar
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QInputDialog, QWidget

from memdesk.core.base.errors import MemDeskError, RevertError
from memdesk.core.graph.store import Edit, Entity, Fact, KnowledgeGraph
from memdesk.core.memory.graph_revert import GRAPH_KINDS
from memdesk.core.memory.history import USER, Change
from memdesk.core.memory.revert import Reverter
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import literal
from memdesk.ui.panels.knowledge_reads import ENTITY_LIMIT


class Shown(Protocol):
    """What the panel shows, which the edits apply to."""

    agent_id: int | None
    current: Entity | None

    def selected_fact(self) -> Fact | None: ...


class KnowledgeEdits(QObject):
    applied = Signal(str)
    select_requested = Signal(int)
    failed = Signal(object)

    def __init__(self, graph: KnowledgeGraph, reverter: Reverter | None, shown: Shown, dialogs_parent: QWidget) -> None:
        super().__init__(dialogs_parent)
        self.graph, self.reverter, self.shown = graph, reverter, shown
        self.parent_widget = dialogs_parent
        self.undo_stack: list[Edit] = []
        self.last_edit: Edit | None = None

    def forget_undo(self) -> None:
        """Another agent is shown: the in-memory undo stack was about the one before."""
        self.undo_stack.clear()

    def next_undo(self) -> Change | None:
        """The recorded edit Undo takes back next: the user's newest graph change not undone yet."""
        agent_id = self.shown.agent_id
        if self.reverter is None or agent_id is None:
            return None
        return self.reverter.history.newest_unreverted(agent_id, GRAPH_KINDS, source=USER)

    # --- edits (each undoable) ---------------------------------------------------------------
    def _apply(self, edit_function: Callable[[], Edit], note: Callable[[Edit], str] = lambda _edit: "") -> bool:
        try:
            edit = edit_function()
        except MemDeskError as error:
            self.failed.emit(error)
            return False
        if self.reverter is None:
            self.undo_stack.append(edit)
        self.last_edit = edit
        self.applied.emit(note(edit))
        return True

    def rename_entity(self, name: str, kind: str | None = None) -> bool:
        current = self.shown.current
        if current is None:
            return False
        return self._apply(lambda: self.graph.rename(current.id, name, kind))

    def merge_into(self, target_name: str) -> bool:
        current, agent_id = self.shown.current, self.shown.agent_id
        if current is None or agent_id is None:
            return False
        target = self.graph.find(agent_id, target_name)
        if target is None:
            self.failed.emit(MemDeskError(f"No entity named {target_name!r}"))
            return False
        if self._apply(lambda: self.graph.merge(current.id, target.id)):
            self.select_requested.emit(target.id)
            return True
        return False

    def split_alias(self, alias_name: str) -> bool:
        current = self.shown.current
        if current is None:
            return False
        alias = next((i for i, name in self.graph.alias_rows(current.id) if name == alias_name), None)
        if alias is None:
            return False
        return self._apply(lambda: self.graph.split(alias))

    def delete_entity(self) -> bool:
        current = self.shown.current
        if current is None:
            return False
        return self._apply(
            lambda: self.graph.delete_entity(current.id),
            lambda edit: f"Deleted {edit.label[7:]} · Ctrl+Z brings it back",
        )

    def add_fact(self, relation: str, other: str) -> bool:
        current, agent_id = self.shown.current, self.shown.agent_id
        if current is None or agent_id is None:
            return False
        return self._apply(lambda: self.graph.insert_fact(agent_id, current.name, relation, other, author="user")[1])

    def edit_relation(self, relation: str) -> bool:
        fact = self.shown.selected_fact()
        return fact is not None and self._apply(lambda: self.graph.edit_fact(fact.id, relation=relation))

    def end_fact(self) -> bool:
        fact = self.shown.selected_fact()
        now = self.graph.clock.now()
        return fact is not None and fact.current and self._apply(lambda: self.graph.edit_fact(fact.id, valid_to=now))

    def delete_fact(self) -> bool:
        fact = self.shown.selected_fact()
        return fact is not None and self._apply(lambda: self.graph.delete_fact(fact.id))

    # --- undo --------------------------------------------------------------------------------
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
        self.applied.emit(f"Undone: {edit.label}")

    def _undo_recorded(self) -> None:
        change, agent_id = self.next_undo(), self.shown.agent_id
        if change is None or self.reverter is None or agent_id is None:
            return
        try:
            self.reverter.undo_last_of(agent_id, GRAPH_KINDS, source=USER)
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
        self.applied.emit(f"Undone: {change.describe()}")

    # --- dialogs -------------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_rename_clicked(self) -> None:
        current = self.shown.current
        if current is None:
            return
        name, ok = QInputDialog.getText(self.parent_widget, "Rename entity", "Name:", text=current.name)
        if ok and name.strip():
            self.rename_entity(name.strip())

    @Slot()
    @reports_errors
    def on_merge_clicked(self) -> None:
        current, agent_id = self.shown.current, self.shown.agent_id
        if current is None or agent_id is None:
            return
        choices = [e.name for e in self.graph.entities(agent_id, limit=ENTITY_LIMIT) if e.id != current.id]
        name, ok = QInputDialog.getItem(
            self.parent_widget, "Merge entity", literal(f"Merge {current.name} into:"), choices, 0, True
        )
        if ok and name:
            self.merge_into(name)

    @Slot()
    @reports_errors
    def on_split_clicked(self) -> None:
        current = self.shown.current
        if current is None or not current.aliases:
            return
        name, ok = QInputDialog.getItem(
            self.parent_widget, "Split alias", "Make this alias an entity of its own:", list(current.aliases), 0, False
        )
        if ok and name:
            self.split_alias(name)

    @Slot()
    @reports_errors
    def on_add_fact_clicked(self) -> None:
        current = self.shown.current
        if current is None:
            return
        parent = self.parent_widget
        relation, ok = QInputDialog.getText(
            parent, "Add fact", literal(f"{current.name} … (relation, such as lives in):")
        )
        if not ok or not relation.strip():
            return
        other, ok = QInputDialog.getText(parent, "Add fact", literal(f"{current.name} {relation.strip()} …:"))
        if ok and other.strip():
            self.add_fact(relation.strip(), other.strip())

    @Slot()
    @reports_errors
    def on_edit_fact_clicked(self) -> None:
        fact = self.shown.selected_fact()
        if fact is None:
            return
        relation, ok = QInputDialog.getText(
            self.parent_widget, "Edit fact", literal(f"{fact.subject} … {fact.object}:"), text=fact.relation
        )
        if ok and relation.strip():
            self.edit_relation(relation.strip())
