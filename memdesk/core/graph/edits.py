"""The user's edits of the graph (rename, merge, split, delete, fact edits): flags and column
updates, each recorded as one change and returned as an ``Edit`` that ``undo`` reverts exactly."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from memdesk.core.base.clock import iso
from memdesk.core.base.errors import ToolError
from memdesk.core.graph import names
from memdesk.core.graph.changes import ENTITY_CHANGE, FACT_CHANGE, ChangeRecording
from memdesk.core.graph.entities import Entities
from memdesk.core.graph.facts import MentionsAndFacts
from memdesk.core.graph.records import Edit, Fact
from memdesk.core.graph.relations import clean_relation
from memdesk.core.storage import Database


class UserEdits:
    """The part of ``KnowledgeGraph`` that carries out the user's edits of the entities and facts
    (``changes`` records each as one change); ``forget_vectors`` drops what the graph keeps in memory
    about an agent's rows once an edit changed them."""

    def __init__(
        self,
        db: Database,
        entities: Entities,
        facts: MentionsAndFacts,
        changes: ChangeRecording,
        forget_vectors: Callable[[int], None],
    ) -> None:
        self._db = db
        self._entities = entities
        self._facts = facts
        self._changes = changes
        self._forget_vectors = forget_vectors

    def rename(self, entity_id: int, name: str, kind: str | None = None) -> Edit:
        """Give the entity a new canonical name (and kind). A name another entity already has is
        refused: merge them instead."""
        root = self._entities.root(entity_id)
        if not names.valid_name(name):
            raise ToolError(f"{name!r} is not a usable entity name")
        key = names.name_key(name)
        other = self._db.query_one(
            "SELECT id, COALESCE(merged_into, id) FROM graph_entities WHERE agent_id = (SELECT agent_id"
            " FROM graph_entities WHERE id = ?) AND key = ?",
            (root, key),
        )
        if other is not None and int(other[1]) != root:
            raise ToolError(f"Another entity is already called {names.display_name(name)!r}: merge the two instead")
        edit = Edit(
            f"rename to {names.display_name(name)}", self._changes.snapshot("graph_entities", "id = ?", (root,))
        )
        old_name = self._entities.entity(root).name
        with self._db.transaction():
            if other is not None and int(other[0]) != root:
                # The new name is one of this entity's aliases: the alias row gives its key up.
                edit.before += self._changes.snapshot("graph_entities", "id = ?", (int(other[0]),))
                self._db.execute("UPDATE graph_entities SET key = key || ' #' || id WHERE id = ?", (int(other[0]),))
            self._db.execute(
                "UPDATE graph_entities SET name = ?, key = ?, kind = COALESCE(?, kind), author = 'user' WHERE id = ?",
                (names.display_name(name), key, kind, root),
            )
            self._changes.record_edit(
                self._agent_of(root),
                ENTITY_CHANGE,
                root,
                "update",
                edit,
                source="user",
                before=old_name,
                after=names.display_name(name),
            )
        self._forget_vectors(self._agent_of(root))
        return edit

    def merge(self, entity_id: int, into_id: int) -> Edit:
        """Make ``entity_id`` (and its aliases) aliases of ``into_id``."""
        source, target = self._entities.root(entity_id), self._entities.root(into_id)
        if source == target:
            raise ToolError("An entity cannot be merged into itself")
        source_name, target_name = self._entities.entity(source).name, self._entities.entity(target).name
        edit = Edit(
            f"merge {source_name} into {target_name}",
            self._changes.snapshot("graph_entities", "id = ? OR merged_into = ?", (source, source)),
        )
        with self._db.transaction():
            self._db.execute(
                "UPDATE graph_entities SET merged_into = ? WHERE id = ? OR merged_into = ?", (target, source, source)
            )
            edit.before += self._facts.reconcile(target)
            self._changes.record_edit(
                self._agent_of(target),
                ENTITY_CHANGE,
                source,
                "update",
                edit,
                source="user",
                before=source_name,
                after=f"{source_name} (an alias of {target_name})",
                label=source_name,
                note=edit.label,
            )
        self._forget_vectors(self._agent_of(target))
        return edit

    def split(self, alias_id: int) -> Edit:
        """Undo a merge for one alias: it becomes an entity of its own again, taking back the
        mentions and facts that were written against it."""
        row = self._db.query_one("SELECT merged_into, name FROM graph_entities WHERE id = ?", (alias_id,))
        if row is None or row[0] is None:
            raise ToolError("Only an alias can be split off")
        edit = Edit(f"split {row[1]} off", self._changes.snapshot("graph_entities", "id = ?", (alias_id,)))
        with self._db.transaction():
            self._db.execute("UPDATE graph_entities SET merged_into = NULL, deleted = 0 WHERE id = ?", (alias_id,))
            self._changes.record_edit(
                self._agent_of(alias_id),
                ENTITY_CHANGE,
                alias_id,
                "update",
                edit,
                source="user",
                before=self._changes.state_text("graph_entities", edit.before[0][1]),
                after=row[1],
                label=row[1],
                note=edit.label,
            )
        self._forget_vectors(self._agent_of(alias_id))
        return edit

    def alias_rows(self, entity_id: int) -> list[tuple[int, str]]:
        root = self._entities.root(entity_id)
        return [
            (int(r[0]), r[1])
            for r in self._db.query("SELECT id, name FROM graph_entities WHERE merged_into = ? ORDER BY name", (root,))
        ]

    def delete_entity(self, entity_id: int) -> Edit:
        """Hide the entity and its facts. The row stays, so the extractor does not bring the name
        back and ``undo`` restores everything."""
        root = self._entities.root(entity_id)
        name = self._entities.entity(root).name
        edit = Edit(f"delete {name}", self._changes.snapshot("graph_entities", "id = ?", (root,)))
        with self._db.transaction():
            self._db.execute("UPDATE graph_entities SET deleted = 1 WHERE id = ?", (root,))
            self._changes.record_edit(
                self._agent_of(root), ENTITY_CHANGE, root, "delete", edit, source="user", before=name, after=None
            )
        self._forget_vectors(self._agent_of(root))
        return edit

    def insert_fact(
        self,
        agent_id: int,
        subject: str,
        relation: str,
        obj: str,
        *,
        author: str,
        message_id: int | None = None,
        valid_from: datetime | None = None,
        cause: Any = None,
    ) -> tuple[Fact, Edit]:
        """A fact from the agent or the user, by names (unknown names become entities). Recorded
        as one change (with the entities it created and the facts it closed); ``cause`` is the
        history's Cause of an agent's call."""
        if not clean_relation(relation):
            raise ToolError("relation must not be empty")
        with self._db.transaction():
            first_entity = int(self._db.scalar("SELECT COALESCE(MAX(id), 0) FROM graph_entities"))
            # Known names (a deleted one comes back): their rows as they were, for undo.
            known = [self._entities.find(agent_id, name, include_deleted=True) for name in (subject, obj)]
            entity_rows = [
                row
                for e in known
                if e is not None
                for row in self._changes.snapshot("graph_entities", "id = ?", (e.id,))
            ]
            with self._changes.one_change():
                subject_id = self._resolve_named(agent_id, subject, author)
                object_id = self._resolve_named(agent_id, obj, author)
                if self._entities.root(subject_id) == self._entities.root(object_id):
                    raise ToolError("subject and object must be different entities")
                before = self._changes.snapshot("graph_facts", "agent_id = ? AND valid_to IS NULL", (agent_id,))
                fact_id = self._facts.add_fact(
                    agent_id,
                    subject_id,
                    relation,
                    object_id,
                    author=author,
                    valid_from=valid_from,
                    message_id=message_id,
                )
                assert fact_id is not None
                new_entities = [
                    ("graph_entities", int(r[0]))
                    for r in self._db.query(
                        "SELECT id FROM graph_entities WHERE agent_id = ? AND id > ?", (agent_id, first_entity)
                    )
                ]
            fact = self._facts.fact(fact_id)
            assert fact is not None
            edit = Edit(
                f"add {fact.subject} {fact.relation} {fact.object}",
                entity_rows + before,
                [("graph_facts", fact_id), *new_entities],
            )
            if any(row["id"] == fact_id for _t, row in before):
                edit.inserted = new_entities  # it was known already: nothing of it to take back
            created = [
                name
                for _t, entity_id in new_entities
                if (name := self._changes.row("graph_entities", entity_id)) is not None
            ]
            note = "new entities: " + ", ".join(str(r["name"]) for r in created) if created else ""
            self._changes.record_edit(
                agent_id,
                FACT_CHANGE,
                fact_id,
                "create",
                edit,
                source=author,
                before=None,
                after=self._facts.fact_text(fact_id),
                message_id=message_id,
                note=note,
                cause=cause,
            )
        return fact, edit

    def _resolve_named(self, agent_id: int, name: str, author: str) -> int:
        found = self._entities.find(agent_id, name, include_deleted=True)
        if found is not None:
            if found.deleted:
                self._db.execute("UPDATE graph_entities SET deleted = 0 WHERE id = ?", (found.id,))
            return found.id
        entity_id = self._entities.resolve(agent_id, name, "thing", author=author)
        if entity_id is None:
            raise ToolError(
                f"{name!r} is not a usable entity name (2 to {names.MAX_NAME_CHARS} characters, with letters)"
            )
        return entity_id

    def edit_fact(
        self,
        fact_id: int,
        *,
        relation: str | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None | str = "keep",
    ) -> Edit:
        """Correct a fact's relation or dates (``valid_to=None`` reopens it); it becomes the user's."""
        fact = self._facts.fact(fact_id)
        if fact is None:
            raise ToolError(f"No fact with id {fact_id}")
        if relation is not None and not clean_relation(relation):
            raise ToolError("relation must not be empty")
        edit = Edit(
            f"edit {fact.subject} {fact.relation} {fact.object}",
            self._changes.snapshot("graph_facts", "id = ?", (fact_id,)),
        )
        before = self._facts.fact_text(fact_id)
        with self._db.transaction():
            if relation is not None:
                self._db.execute(
                    "UPDATE graph_facts SET relation = ? WHERE id = ?", (clean_relation(relation), fact_id)
                )
            if valid_from is not None:
                self._db.execute("UPDATE graph_facts SET valid_from = ? WHERE id = ?", (iso(valid_from), fact_id))
            if valid_to is None or isinstance(valid_to, datetime):  # not "keep"
                self._db.execute(
                    "UPDATE graph_facts SET valid_to = ? WHERE id = ?", (iso(valid_to) if valid_to else None, fact_id)
                )
            self._db.execute("UPDATE graph_facts SET author = 'user' WHERE id = ?", (fact_id,))
            self._changes.record_edit(
                fact.agent_id,
                FACT_CHANGE,
                fact_id,
                "update",
                edit,
                source="user",
                before=before,
                after=self._facts.fact_text(fact_id),
            )
        return edit

    def delete_fact(self, fact_id: int) -> Edit:
        fact = self._facts.fact(fact_id)
        if fact is None:
            raise ToolError(f"No fact with id {fact_id}")
        edit = Edit(
            f"delete {fact.subject} {fact.relation} {fact.object}",
            self._changes.snapshot("graph_facts", "id = ?", (fact_id,)),
        )
        with self._db.transaction():
            self._db.execute("UPDATE graph_facts SET deleted = 1 WHERE id = ?", (fact_id,))
            self._changes.record_edit(
                fact.agent_id,
                FACT_CHANGE,
                fact_id,
                "delete",
                edit,
                source="user",
                before=self._facts.fact_text(fact_id),
                after=None,
            )
        return edit

    def undo(self, edit: Edit) -> None:
        """Take one edit back exactly (rows the edit inserted go). The app's Knowledge panel
        undoes through the memory history instead (a recorded revert that survives a restart);
        this is for callers without a history."""
        agents = set()
        with self._db.transaction():
            watched = self._changes.edit_rows(edit)
            now = self._changes.row_states((t, i) for t, i, _r in watched)
            for table, row_id in reversed(edit.inserted):
                if table == "graph_facts":
                    self._db.execute("DELETE FROM graph_facts WHERE id = ?", (row_id,))
            for table, row_id in reversed(edit.inserted):
                if table == "graph_entities":
                    # An entity the edit created may have been mentioned since: hide it instead.
                    used = self._db.scalar(
                        "SELECT 1 FROM graph_mentions WHERE entity_id = ? UNION SELECT 1 FROM graph_facts"
                        " WHERE subject_id = ? OR object_id = ?",
                        (row_id, row_id, row_id),
                    )
                    if used:
                        self._db.execute("UPDATE graph_entities SET deleted = 1 WHERE id = ?", (row_id,))
                    else:
                        self._db.execute("DELETE FROM graph_entities WHERE id = ?", (row_id,))
            for table, row in reversed(edit.before):
                columns = [c for c in row if c != "id"]
                self._db.execute(
                    f"UPDATE {table} SET {', '.join(c + ' = ?' for c in columns)} WHERE id = ?",
                    (*[row[c] for c in columns], row["id"]),
                )
                agents.add(row.get("agent_id"))
            if watched:
                table, row_id = watched[0][0], watched[0][1]
                agent = next((r[2]["agent_id"] for r in now + watched if r[2] is not None), None)
                changed = self._changes.changed_rows(now)
                if agent is not None and changed[0]:
                    kind = FACT_CHANGE if table == "graph_facts" else ENTITY_CHANGE
                    self._changes.record(
                        int(agent),
                        kind,
                        row_id,
                        "update",
                        source="user",
                        before=edit.label,
                        after=f"undone: {edit.label}",
                        note="undo in the Knowledge panel",
                        rows=changed,
                    )
        for agent in agents:
            self._forget_vectors(agent)

    def _agent_of(self, entity_id: int) -> int:
        return int(self._db.scalar("SELECT agent_id FROM graph_entities WHERE id = ?", (entity_id,)))
