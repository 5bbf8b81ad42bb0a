"""Entity lookup and resolution: a name found in a text becomes a row, an alias of the entity it
evidently names (by words, or by meaning through memdesk.core.graph.name_vectors)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.base.errors import ToolError
from memdesk.core.graph import names
from memdesk.core.graph.changes import ENTITY_CHANGE, ChangeRecording
from memdesk.core.graph.name_vectors import NameVectors
from memdesk.core.graph.records import CANON, NAMED_KINDS, Entity, Generation, found_in
from memdesk.core.storage import Database


class Entities:
    """The part of ``KnowledgeGraph`` that finds and makes entities. ``names`` merges a new name
    with a known one by meaning; ``changes`` records each entity made."""

    def __init__(
        self, db: Database, clock: Clock, names: NameVectors, changes: ChangeRecording, generation: Generation
    ) -> None:
        self._db = db
        self._clock = clock
        self._names = names
        self._changes = changes
        self._generation = generation

    def root(self, entity_id: int) -> int:
        row = self._db.query_one("SELECT COALESCE(merged_into, id) FROM graph_entities WHERE id = ?", (entity_id,))
        if row is None:
            raise ToolError(f"No entity with id {entity_id}")
        return int(row[0])

    def entity(self, entity_id: int) -> Entity:
        root = self.root(entity_id)
        found = self._entities("e.id = ?", (root,))
        return found[0]

    def find(self, agent_id: int, name: str, *, include_deleted: bool = False) -> Entity | None:
        """The entity ``name`` denotes (its own name or an alias), or None."""
        key = names.name_key(name)
        if not key:
            return None
        row = self._db.query_one(
            f"SELECT {CANON} FROM graph_entities e WHERE e.agent_id = ? AND e.key = ?", (agent_id, key)
        )
        if row is None:
            return None
        entity = self.entity(int(row[0]))
        return entity if include_deleted or not entity.deleted else None

    def entities(self, agent_id: int, *, text: str = "", limit: int | None = None) -> list[Entity]:
        """Root entities, most mentioned first; ``text`` filters by name or alias (substring)."""
        where = "e.agent_id = ? AND e.merged_into IS NULL AND e.deleted = 0"
        params: list[Any] = [agent_id]
        if text.strip():
            key = names.name_key(text) or text.casefold().strip()
            where += (
                " AND e.id IN (SELECT COALESCE(a.merged_into, a.id) FROM graph_entities a WHERE a.agent_id = ?"
                " AND instr(a.key, ?) > 0)"
            )
            params += [agent_id, key]
        return self._entities(where, params, limit=limit)

    def _entities(self, where: str, params: Sequence[Any], *, limit: int | None = None) -> list[Entity]:
        rows = self._db.query(
            f"""
            SELECT e.id, e.agent_id, e.name, e.kind, e.author, e.deleted, e.merged_into,
                   (SELECT COUNT(*) FROM graph_mentions m JOIN graph_entities a ON a.id = m.entity_id
                     WHERE a.id = e.id OR a.merged_into = e.id) AS mentions,
                   (SELECT MAX(m.at) FROM graph_mentions m JOIN graph_entities a ON a.id = m.entity_id
                     WHERE a.id = e.id OR a.merged_into = e.id) AS last_seen,
                   (SELECT group_concat(a.name, char(31)) FROM graph_entities a WHERE a.merged_into = e.id) AS aliases
            FROM graph_entities e WHERE {where}
            ORDER BY mentions DESC, last_seen DESC, e.id
            {"" if limit is None else "LIMIT " + str(int(limit))}
            """,
            tuple(params),
        )
        return [
            Entity(
                r[0],
                r[1],
                r[2],
                r[3],
                tuple(sorted(set(r[9].split("\x1f")))) if r[9] else (),
                int(r[7]),
                parse_iso(r[8]) if r[8] else None,
                r[4],
                bool(r[5]),
                r[6],
            )
            for r in rows
        ]

    def resolve(
        self,
        agent_id: int,
        name: str,
        kind: str = "thing",
        *,
        author: str = "extractor",
        at: datetime | None = None,
        message_id: int | None = None,
        passage_id: int | None = None,
    ) -> int | None:
        """The row id for ``name``: its own row when the key is known; otherwise a new row, made
        an alias of an entity it evidently names ("Ann" of "Ann Smith", by words or meaning).
        None when ``name`` is no plausible entity name. ``message_id``/``passage_id``: where the
        name was found, for the memory history."""
        if not names.valid_name(name):
            return None
        key = names.name_key(name)
        row = self._db.query_one("SELECT id FROM graph_entities WHERE agent_id = ? AND key = ?", (agent_id, key))
        if row is not None:
            return int(row[0])
        target = self._alias_target(agent_id, name, kind) if kind in NAMED_KINDS else None
        self._generation.bump()
        cursor = self._db.execute(
            "INSERT INTO graph_entities(agent_id, name, key, kind, merged_into, author, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (agent_id, names.display_name(name), key, kind, target, author, iso(at or self._clock.now())),
        )
        if target is None and kind in NAMED_KINDS:
            self._names.remember(agent_id, int(cursor.lastrowid), name)
        entity_id = int(cursor.lastrowid)
        notes = [
            f"an alias of {self.entity(target).name}" if target is not None else "",
            found_in(message_id, passage_id),
        ]
        self._changes.record(
            agent_id,
            ENTITY_CHANGE,
            entity_id,
            "create",
            source=author,
            after=names.display_name(name),
            message_id=message_id,
            note="; ".join(n for n in notes if n),
            rows=([["graph_entities", entity_id, None]], self._changes.row_states([("graph_entities", entity_id)])),
        )
        return int(cursor.lastrowid)

    def _alias_target(self, agent_id: int, name: str, kind: str) -> int | None:
        candidates = self._lexical_candidates(agent_id, name)
        if len(candidates) == 1:
            return candidates.pop()
        if candidates or not self._names.enabled:
            return None  # ambiguous ("Ann" with "Ann Smith" and "Ann Lee"): keep apart
        return self._names.target(agent_id, name)

    def _lexical_candidates(self, agent_id: int, name: str) -> set[int]:
        """Root entities ``name`` may be an alias of by its words: the new name's words within a
        known name, or a known name's words within it."""
        placeholders = ",".join("?" * len(NAMED_KINDS))
        kinds = tuple(sorted(NAMED_KINDS))
        candidates: set[int] = set()
        for word in names.name_key(name).split():
            for row in self._db.query(
                f"SELECT COALESCE(merged_into, id), name FROM graph_entities WHERE agent_id = ? AND deleted = 0"
                f" AND kind IN ({placeholders}) AND (key = ? OR key LIKE ? OR key LIKE ? OR key LIKE ?)",
                (agent_id, *kinds, word, f"{word} %", f"% {word}", f"% {word} %"),
            ):
                if names.lexical_alias(name, row[1]) or names.lexical_alias(row[1], name):
                    candidates.add(int(row[0]))
        return candidates

    def prepare_names(self, agent_id: int, found: Sequence[tuple[str, str]]) -> None:
        """Do the slow part of resolving ``found`` ((name, kind) pairs) now, before a transaction
        opens: embedding the names that resolving will compare by meaning or remember (new names of
        a named kind that are not plainly one known entity's alias). A writer holding the store's
        write lock meanwhile would keep every other writer waiting."""
        if not self._names.enabled:
            return
        embedded = [
            name
            for name, kind in found
            if kind in NAMED_KINDS
            and names.valid_name(name)
            and self._db.query_one(
                "SELECT 1 FROM graph_entities WHERE agent_id = ? AND key = ?", (agent_id, names.name_key(name))
            )
            is None
            and len(self._lexical_candidates(agent_id, name)) != 1
        ]
        self._names.prepare(agent_id, embedded)
