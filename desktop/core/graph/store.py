"""The knowledge graph of one store: entities (with aliases), their mentions and dated facts.

Every name the extractor meets gets its own entity row; a row that names the same thing as
another points at it through ``merged_into`` (always the root: merges are kept flat). The root is
the entity people see, the other rows are its aliases, and since mentions and facts keep the row
they were written against, a merge is undone by clearing one column.

Facts are never deleted by newer facts: a single-valued relation ("lives in") given a new object
closes the old fact (``valid_to``), so "where did Ann live before?" stays answerable.

User edits (rename, merge, split, delete, fact edits) are flags and column updates, each returned
as an ``Edit`` that ``undo`` reverts exactly.

Every change is also recorded in the memory history (``history``: the store's MemoryHistory,
passed in by the composition root, since memory sits above the graph): who made it (the author),
what it said before and after, the message it came from, and the rows it touched before and
after (``before_meta``/``after_meta`` = ``{"rows": [[table, id, row or null], ...]}``). The rows
make any recorded change revertible later (``restore_rows``, driven by the memory package's
GraphReverter), across restarts, with a conflict when something changed the rows since. One user
edit is one recorded change, however many rows it touched.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from contextlib import contextmanager
from typing import Any, Iterator, Protocol

import numpy as np

from desktop.core.clock import Clock, iso, parse_iso
from desktop.core.graph import names
from desktop.core.graph.relations import clean_relation, relation_key, single_valued
from desktop.core.storage import Database
from desktop.errors import RevertError, ToolError

AUTHORS = ("extractor", "agent", "user")
#: The memory history's kinds for graph rows (desktop.core.memory.history).
FACT_CHANGE, ENTITY_CHANGE = "graph_fact", "graph_entity"


#: The tables whose rows a recorded change carries (mentions are evidence, not edits).
ROW_TABLES = ("graph_entities", "graph_facts")
#: A row in a change's meta: [table, id, the row's columns, or None when it did not exist].
RowState = list


class ChangeRecorder(Protocol):
    """What the graph needs of the memory history (desktop.core.memory.history.MemoryHistory).
    ``cause`` is the history's Cause, passed through untouched (the graph does not look inside)."""

    def record(self, agent_id: int, kind: str, target_id: int | None, action: str, *, source: str, before: str | None = None,
               after: str | None = None, label: str = "", before_meta: dict[str, Any] | None = None,
               after_meta: dict[str, Any] | None = None, cause: Any = None, message_id: int | None = None, note: str = "") -> int: ...

#: Kinds whose names are proper names: only these merge by lexical or vector similarity
#: ("Ann" and "Ann Smith" are one person; "coffee" and "coffee shop" are not one thing).
NAMED_KINDS = frozenset({"person", "place", "org", "group", "event", "work", "product", "language", "thing"})
SELF_KIND = "self"
#: Cosine similarity of two names' embeddings above which they are taken as one entity.
VECTOR_MERGE = 0.9
#: Recency half-life of the "top entities" ranking.
RECENCY_HALF_LIFE_DAYS = 14.0

_CANON = "COALESCE(e.merged_into, e.id)"


@dataclass(frozen=True)
class Entity:
    id: int
    agent_id: int
    name: str
    kind: str
    aliases: tuple[str, ...] = ()
    mentions: int = 0
    last_seen: datetime | None = None
    author: str = "extractor"
    deleted: bool = False
    merged_into: int | None = None


@dataclass(frozen=True)
class Fact:
    id: int
    agent_id: int
    subject_id: int  # canonical (root) ids
    subject: str
    relation: str
    object_id: int
    object: str
    message_id: int | None
    passage_id: int | None
    valid_from: datetime
    valid_to: datetime | None
    author: str

    @property
    def current(self) -> bool:
        return self.valid_to is None

    def source(self) -> tuple[str, int] | None:
        if self.message_id is not None:
            return ("message", self.message_id)
        if self.passage_id is not None:
            return ("passage", self.passage_id)
        return None


@dataclass
class Edit:
    """What one user edit changed: rows' previous values and rows it inserted, for ``undo``."""

    label: str
    before: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    inserted: list[tuple[str, int]] = field(default_factory=list)


class KnowledgeGraph:
    """The graph over one database connection. ``embedder`` (optional) lets new names merge
    with known ones by meaning; without it only lexical aliases merge."""

    def __init__(self, db: Database, clock: Clock, embedder=None, *, history: ChangeRecorder | None = None) -> None:
        self._db = db
        self._clock = clock
        self._embedder = embedder
        self._history = history
        # Above zero while one edit runs: its inner steps are recorded as one change at its end.
        self._grouping = 0
        self._name_vectors: dict[int, tuple[list[int], np.ndarray | None]] = {}
        # Writes through this object; other connections' commits show in PRAGMA data_version.
        self._generation = 0
        self._top_cache: dict[int, tuple[tuple, list[tuple[Entity, float]]]] = {}

    @property
    def db(self) -> Database:
        return self._db

    def _record(self, agent_id: int, kind: str, target_id: int | None, action: str, *, source: str, before: str | None = None,
                after: str | None = None, message_id: int | None = None, note: str = "", rows: tuple[list, list] | None = None,
                cause: Any = None, label: str | None = None) -> None:
        """Record one change; ``rows`` = (rows before, rows after) for revert."""
        if self._history is None or self._grouping:
            return
        label = label if label is not None else (after or before or "")
        extra: dict[str, Any] = {}
        if rows is not None:
            extra = {"before_meta": {"rows": rows[0]}, "after_meta": {"rows": rows[1]}}
        if cause is not None:
            extra["cause"] = cause
        else:
            extra.update(message_id=message_id, note=note)
        self._history.record(agent_id, kind, target_id, action, source=source, before=before, after=after,
                             label=label if len(label) <= 60 else label[:59] + "…", **extra)

    # --- row states: what a recorded change carries so it can be reverted -------------------------
    def _row(self, table: str, row_id: int) -> dict[str, Any] | None:
        if table not in ROW_TABLES:
            raise ValueError(f"not a graph table: {table}")
        cursor = self._db.execute(f"SELECT * FROM {table} WHERE id = ?", (int(row_id),))
        row = cursor.fetchone()
        return None if row is None else dict(zip([d[0] for d in cursor.description], row))

    def row_states(self, keys: Iterable[tuple[str, int]]) -> list[RowState]:
        """The rows as they are now, as a change's meta holds them (read in batches: an agent's
        insert watches all its current facts)."""
        keys = [(table, int(row_id)) for table, row_id in keys]
        found: dict[tuple[str, int], dict[str, Any]] = {}
        for table in {t for t, _i in keys}:
            if table not in ROW_TABLES:
                raise ValueError(f"not a graph table: {table}")
            ids = sorted({i for t, i in keys if t == table})
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                cursor = self._db.execute(f"SELECT * FROM {table} WHERE id IN ({','.join('?' * len(chunk))})", tuple(chunk))
                columns = [d[0] for d in cursor.description]
                for row in cursor.fetchall():
                    found[(table, int(row[0]))] = dict(zip(columns, row))
        return [[table, row_id, found.get((table, row_id))] for table, row_id in keys]

    def _changed_rows(self, before: list[RowState]) -> tuple[list[RowState], list[RowState]]:
        """``before`` and the same rows now, leaving out rows the change left as they were."""
        after = self.row_states((t, i) for t, i, _row in before)
        pairs = [(b, a) for b, a in zip(before, after) if b[2] != a[2]]
        return [b for b, _a in pairs], [a for _b, a in pairs]

    def _edit_rows(self, edit: "Edit") -> list[RowState]:
        seen: set[tuple[str, int]] = set()
        states: list[RowState] = []
        for table, row in edit.before:
            if (table, int(row["id"])) not in seen:
                seen.add((table, int(row["id"])))
                states.append([table, int(row["id"]), dict(row)])
        for table, row_id in edit.inserted:
            if (table, int(row_id)) not in seen:
                seen.add((table, int(row_id)))
                states.append([table, int(row_id), None])
        return states

    @contextmanager
    def _one_change(self) -> Iterator[None]:
        """Inner steps of an edit (new entities, closed facts) are not recorded one by one."""
        self._grouping += 1
        try:
            yield
        finally:
            self._grouping -= 1

    def _record_edit(self, agent_id: int, kind: str, target_id: int, action: str, edit: "Edit", *, source: str, before: str | None,
                     after: str | None, label: str | None = None, message_id: int | None = None, note: str = "", cause: Any = None) -> None:
        rows = self._changed_rows(self._edit_rows(edit))
        if rows[0]:
            self._record(agent_id, kind, target_id, action, source=source, before=before, after=after, label=label,
                         message_id=message_id, note=note, rows=rows, cause=cause)

    def state_text(self, table: str, row: dict[str, Any] | None) -> str | None:
        """A row state as people read it in the history: "Ann (an alias of Ann Smith)",
        "Ann lives in Paris (until 2026-05-01)"; None for a row that does not exist."""
        if row is None:
            return None
        if table == "graph_entities":
            text = str(row["name"])
            if row.get("merged_into") is not None:
                target = self._db.scalar("SELECT name FROM graph_entities WHERE id = ?", (row["merged_into"],))
                text += f" (an alias of {target})" if target else " (an alias)"
        else:
            def name(entity_id: int) -> str:
                found = self._db.query_one(
                    "SELECT r.name FROM graph_entities e JOIN graph_entities r ON r.id = COALESCE(e.merged_into, e.id) WHERE e.id = ?",
                    (entity_id,),
                )
                return str(found[0]) if found else f"entity {entity_id}"

            text = f"{name(row['subject_id'])} {row['relation']} {name(row['object_id'])}"
            if row.get("valid_to"):
                text += f" (until {str(row['valid_to'])[:10]})"
        return text + " (deleted)" if row.get("deleted") else text

    def restore_rows(self, agent_id: int, kind: str, target_id: int, rows: list[RowState], *, action: str, cause: Any,
                     label: str = "") -> None:
        """Put rows back as a change's meta holds them (a revert): a row that did not exist is
        hidden (deleted flag: ids in the history stay valid), a row that is gone is inserted
        again. Recorded as one change by the user."""
        table = "graph_facts" if kind == FACT_CHANGE else "graph_entities"
        before_rows = self.row_states((t, i) for t, i, _row in rows)
        before_text = self.state_text(table, self._row(table, target_id))
        restoring = [row_id for row_table, row_id, wanted in rows if row_table == "graph_entities" and wanted is not None]
        with self._db.transaction():
            # Names move between the rows restored (a rename onto an alias's name): free their
            # keys first, so the order of the rows does not matter.
            for row_id in restoring:
                self._db.execute("UPDATE graph_entities SET key = '#restoring ' || id WHERE id = ?", (row_id,))
            for (row_table, row_id, wanted), (_t, _i, now) in zip(rows, before_rows):
                if row_table not in ROW_TABLES:
                    raise RevertError(f"A graph change names an unknown table ({row_table})")
                if wanted is None:
                    if now is not None and not now.get("deleted"):
                        self._db.execute(f"UPDATE {row_table} SET deleted = 1 WHERE id = ?", (row_id,))
                    continue
                if row_table == "graph_entities":
                    other = self._db.query_one(
                        "SELECT name FROM graph_entities WHERE agent_id = ? AND key = ? AND id != ?", (wanted["agent_id"], wanted["key"], row_id)
                    )
                    if other is not None:
                        raise RevertError(
                            f"Cannot revert: another entity is called {other[0]!r} now", hint="rename or merge it in the Knowledge panel first"
                        )
                columns = [c for c in wanted if c != "id"]
                if now is None:
                    self._db.execute(
                        f"INSERT INTO {row_table}(id, {', '.join(columns)}) VALUES (?, {', '.join('?' * len(columns))})",
                        (row_id, *[wanted[c] for c in columns]),
                    )
                else:
                    self._db.execute(
                        f"UPDATE {row_table} SET {', '.join(c + ' = ?' for c in columns)} WHERE id = ?", (*[wanted[c] for c in columns], row_id)
                    )
            changed = self._changed_rows(before_rows)
            if changed[0]:
                self._record(agent_id, kind, target_id, action, source="user", before=before_text,
                             after=self.state_text(table, self._row(table, target_id)), label=label, rows=changed, cause=cause)
        self._forget_vectors(agent_id)

    def _fact_text(self, fact_id: int) -> str:
        fact = self.fact(fact_id)
        if fact is None:
            return f"fact {fact_id}"
        until = f" (until {fact.valid_to:%Y-%m-%d})" if fact.valid_to else ""
        return f"{fact.subject} {fact.relation} {fact.object}{until}"

    @property
    def clock(self) -> Clock:
        return self._clock

    # --- entities --------------------------------------------------------------------------
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
            f"SELECT {_CANON} FROM graph_entities e WHERE e.agent_id = ? AND e.key = ?", (agent_id, key)
        )
        if row is None:
            return None
        entity = self.entity(int(row[0]))
        return entity if include_deleted or not entity.deleted else None

    def entities(self, agent_id: int, *, text: str = "", limit: int | None = None) -> list[Entity]:
        """Root entities, most mentioned first; ``text`` filters by name or alias (substring)."""
        where, params = "e.agent_id = ? AND e.merged_into IS NULL AND e.deleted = 0", [agent_id]
        if text.strip():
            key = names.name_key(text) or text.casefold().strip()
            where += " AND e.id IN (SELECT COALESCE(a.merged_into, a.id) FROM graph_entities a WHERE a.agent_id = ? AND instr(a.key, ?) > 0)"
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
            {'' if limit is None else 'LIMIT ' + str(int(limit))}
            """,
            tuple(params),
        )
        return [
            Entity(
                r[0], r[1], r[2], r[3], tuple(sorted(set(r[9].split("\x1f")))) if r[9] else (), int(r[7]),
                parse_iso(r[8]) if r[8] else None, r[4], bool(r[5]), r[6],
            )
            for r in rows
        ]

    def count(self, agent_id: int) -> tuple[int, int]:
        """(entities, current facts) people can see."""
        entities = self._db.scalar(
            "SELECT COUNT(*) FROM graph_entities WHERE agent_id = ? AND merged_into IS NULL AND deleted = 0", (agent_id,)
        )
        return int(entities), len(self._fact_rows("f.agent_id = ? AND f.valid_to IS NULL", (agent_id,)))

    def resolve(self, agent_id: int, name: str, kind: str = "thing", *, author: str = "extractor", at: datetime | None = None,
                message_id: int | None = None, passage_id: int | None = None) -> int | None:
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
        self._generation += 1
        cursor = self._db.execute(
            "INSERT INTO graph_entities(agent_id, name, key, kind, merged_into, author, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (agent_id, names.display_name(name), key, kind, target, author, iso(at or self._clock.now())),
        )
        if target is None and kind in NAMED_KINDS:
            self._remember_vector(agent_id, cursor.lastrowid, name)
        entity_id = int(cursor.lastrowid)
        notes = [f"an alias of {self.entity(target).name}" if target is not None else "", _found_in(message_id, passage_id)]
        self._record(agent_id, ENTITY_CHANGE, entity_id, "create", source=author, after=names.display_name(name),
                     message_id=message_id, note="; ".join(n for n in notes if n),
                     rows=([["graph_entities", entity_id, None]], self.row_states([("graph_entities", entity_id)])))
        return int(cursor.lastrowid)

    def _alias_target(self, agent_id: int, name: str, kind: str) -> int | None:
        placeholders = ",".join("?" * len(NAMED_KINDS))
        kinds = tuple(sorted(NAMED_KINDS))
        words = names.name_key(name).split()
        candidates: set[int] = set()
        # Lexical: the new name's words within a known name, or a known name's words within it.
        for word in words:
            for row in self._db.query(
                f"SELECT COALESCE(merged_into, id), name FROM graph_entities WHERE agent_id = ? AND deleted = 0"
                f" AND kind IN ({placeholders}) AND (key = ? OR key LIKE ? OR key LIKE ? OR key LIKE ?)",
                (agent_id, *kinds, word, f"{word} %", f"% {word}", f"% {word} %"),
            ):
                if names.lexical_alias(name, row[1]) or names.lexical_alias(row[1], name):
                    candidates.add(int(row[0]))
        if len(candidates) == 1:
            return candidates.pop()
        if candidates or self._embedder is None:
            return None  # ambiguous ("Ann" with "Ann Smith" and "Ann Lee"): keep apart
        return self._vector_target(agent_id, name)

    def _vectors(self, agent_id: int) -> tuple[list[int], np.ndarray | None]:
        if agent_id not in self._name_vectors:
            rows = self._db.query(
                f"SELECT id, name FROM graph_entities WHERE agent_id = ? AND merged_into IS NULL AND deleted = 0"
                f" AND kind IN ({','.join('?' * len(NAMED_KINDS))})",
                (agent_id, *sorted(NAMED_KINDS)),
            )
            ids = [int(r[0]) for r in rows]
            matrix = _normalised(self._embedder.embed([r[1] for r in rows])) if rows else None
            self._name_vectors[agent_id] = (ids, matrix)
        return self._name_vectors[agent_id]

    def _vector_target(self, agent_id: int, name: str) -> int | None:
        ids, matrix = self._vectors(agent_id)
        if matrix is None or not ids:
            return None
        vector = _normalised(self._embedder.embed([name]))[0]
        scores = matrix @ vector
        best = int(np.argmax(scores))
        if scores[best] < VECTOR_MERGE:
            return None
        if not self._db.scalar("SELECT 1 FROM graph_entities WHERE id = ? AND merged_into IS NULL AND deleted = 0", (ids[best],)):
            # Removed or merged from another connection (a forget) since the cache was built.
            self._forget_vectors(agent_id)
            return self._vector_target(agent_id, name)
        return ids[best]

    def _remember_vector(self, agent_id: int, entity_id: int, name: str) -> None:
        if self._embedder is None or agent_id not in self._name_vectors:
            return
        ids, matrix = self._name_vectors[agent_id]
        vector = _normalised(self._embedder.embed([name]))
        self._name_vectors[agent_id] = (ids + [entity_id], vector if matrix is None else np.vstack([matrix, vector]))

    def _forget_vectors(self, agent_id: int) -> None:
        self._generation += 1
        self._name_vectors.pop(agent_id, None)

    def drop_cached(self, agent_id: int) -> None:
        """Forget what this object keeps in memory about an agent's graph: its rows were removed
        underneath it (desktop.core.agent.forget), and a cached name vector would point at one."""
        self._forget_vectors(agent_id)

    # --- mentions --------------------------------------------------------------------------
    def add_mention(self, agent_id: int, entity_id: int, *, at: datetime, message_id: int | None = None, passage_id: int | None = None) -> None:
        self._generation += 1
        self._db.execute(
            "INSERT INTO graph_mentions(agent_id, entity_id, message_id, passage_id, at) VALUES (?, ?, ?, ?, ?)",
            (agent_id, entity_id, message_id, passage_id, iso(at)),
        )

    def mentions(self, entity_id: int, *, limit: int = 50) -> list[tuple[str, int, datetime]]:
        """Where the entity (or an alias) was mentioned, newest first: (kind, source id, time)."""
        root = self.root(entity_id)
        rows = self._db.query(
            "SELECT m.message_id, m.passage_id, m.at FROM graph_mentions m JOIN graph_entities a ON a.id = m.entity_id"
            " WHERE a.id = ? OR a.merged_into = ? ORDER BY m.at DESC, m.id DESC LIMIT ?",
            (root, root, limit),
        )
        return [("message", r[0], parse_iso(r[2])) if r[0] is not None else ("passage", r[1], parse_iso(r[2])) for r in rows]

    def clear_source(self, *, message_id: int | None = None, passage_id: int | None = None) -> None:
        """Forget what the extractor took from one source, so extracting it again adds nothing twice."""
        column, value = ("message_id", message_id) if message_id is not None else ("passage_id", passage_id)
        self._generation += 1
        self._db.execute(f"DELETE FROM graph_mentions WHERE {column} = ?", (value,))
        self._db.execute(f"DELETE FROM graph_facts WHERE {column} = ? AND author = 'extractor'", (value,))

    # --- facts -----------------------------------------------------------------------------
    def add_fact(
        self,
        agent_id: int,
        subject_id: int,
        relation: str,
        object_id: int,
        *,
        author: str,
        valid_from: datetime | None = None,
        message_id: int | None = None,
        passage_id: int | None = None,
    ) -> int | None:
        """Record a fact; returns its id, or the id of the identical current fact, or None when it
        is empty or links an entity to itself. A single-valued relation closes the subject's
        older fact with another object (or is itself closed by a newer one)."""
        if author not in AUTHORS:
            raise ValueError(f"unknown author {author!r}")
        relation = clean_relation(relation)
        key = relation_key(relation)
        subject, obj = self.root(subject_id), self.root(object_id)
        if not key or subject == obj:
            return None
        start = iso(valid_from or self._clock.now())
        same = [f for f in self._fact_rows("f.agent_id = ? AND f.valid_to IS NULL", (agent_id,), subject=subject) if relation_key(f.relation) == key]
        for fact in same:
            if fact.object_id == obj:
                return fact.id
        valid_to = None
        closed = []
        if single_valued(relation):
            for fact in same:
                if iso(fact.valid_from) <= start:
                    closed.append((fact.id, self._fact_text(fact.id), self._row("graph_facts", fact.id)))
                    self._db.execute("UPDATE graph_facts SET valid_to = ? WHERE id = ?", (start, fact.id))
                else:  # the known fact is newer: this one ended when it began
                    valid_to = min(valid_to or iso(fact.valid_from), iso(fact.valid_from))
        cursor = self._db.execute(
            "INSERT INTO graph_facts(agent_id, subject_id, relation, object_id, message_id, passage_id, valid_from, valid_to, author, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (agent_id, subject_id, relation, object_id, message_id, passage_id, start, valid_to, author, iso(self._clock.now())),
        )
        fact_id = int(cursor.lastrowid)
        text = self._fact_text(fact_id)
        # Reverting the new fact reopens the facts it closed.
        created_before = [["graph_facts", fact_id, None]] + [["graph_facts", old_id, row] for old_id, _text, row in closed]
        self._record(agent_id, FACT_CHANGE, fact_id, "create", source=author, after=text, message_id=message_id,
                     note=_found_in(message_id, passage_id), rows=(created_before, self.row_states((t, i) for t, i, _r in created_before)))
        for old_id, before, row in closed:
            self._record(agent_id, FACT_CHANGE, old_id, "update", source=author, before=before, after=self._fact_text(old_id),
                         message_id=message_id, note=f"closed by the newer fact: {text}",
                         rows=([["graph_facts", old_id, row]], self.row_states([("graph_facts", old_id)])))
        return fact_id

    def fact(self, fact_id: int) -> Fact | None:
        found = self._fact_rows("f.id = ?", (fact_id,))
        return found[0] if found else None

    def facts(self, entity_id: int, *, current_only: bool = False) -> list[Fact]:
        """Facts with the entity (or an alias) as subject or object, newest first."""
        root = self.root(entity_id)
        where = "f.agent_id = (SELECT agent_id FROM graph_entities WHERE id = ?)" + (" AND f.valid_to IS NULL" if current_only else "")
        return self._fact_rows(where, (root,), touching=root)

    def all_facts(self, agent_id: int) -> list[Fact]:
        return self._fact_rows("f.agent_id = ?", (agent_id,))

    def _fact_rows(self, where: str, params: Sequence[Any], *, subject: int | None = None, touching: int | None = None) -> list[Fact]:
        extra, extra_params = "", []
        if subject is not None:
            extra = " AND COALESCE(s.merged_into, s.id) = ?"
            extra_params = [subject]
        if touching is not None:
            extra = " AND (COALESCE(s.merged_into, s.id) = ? OR COALESCE(o.merged_into, o.id) = ?)"
            extra_params = [touching, touching]
        rows = self._db.query(
            f"""
            SELECT f.id, f.agent_id, rs.id, rs.name, f.relation, ro.id, ro.name, f.message_id, f.passage_id,
                   f.valid_from, f.valid_to, f.author
            FROM graph_facts f
            JOIN graph_entities s ON s.id = f.subject_id
            JOIN graph_entities o ON o.id = f.object_id
            JOIN graph_entities rs ON rs.id = COALESCE(s.merged_into, s.id)
            JOIN graph_entities ro ON ro.id = COALESCE(o.merged_into, o.id)
            WHERE {where} AND f.deleted = 0 AND rs.deleted = 0 AND ro.deleted = 0 {extra}
            ORDER BY f.valid_from DESC, f.id DESC
            """,
            (*params, *extra_params),
        )
        return [
            Fact(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], parse_iso(r[9]), parse_iso(r[10]) if r[10] else None, r[11])
            for r in rows
        ]

    def neighbourhood(self, entity_id: int, depth: int = 2) -> tuple[list[int], list[Fact]]:
        """Entities within ``depth`` facts of the entity (breadth first, itself first) and the
        facts between them, newest first within each ring."""
        start = self.root(entity_id)
        seen = [start]
        frontier = {start}
        facts: dict[int, Fact] = {}
        for _ring in range(max(0, depth)):
            next_frontier: set[int] = set()
            for node in sorted(frontier):
                for fact in self.facts(node):
                    if fact.id not in facts:
                        facts[fact.id] = fact
                    for other in (fact.subject_id, fact.object_id):
                        if other not in seen:
                            seen.append(other)
                            next_frontier.add(other)
            frontier = next_frontier
            if not frontier:
                break
        return seen, list(facts.values())

    # --- ranking ---------------------------------------------------------------------------
    def top_entities(self, agent_id: int, limit: int = 8, *, now: datetime | None = None) -> list[tuple[Entity, float]]:
        """Entities ranked by frequency x recency: mentions times a half-life decay of the time
        since the last one (memary's entity store, sorted the right way round). The user's own
        entity is left out: it is in every conversation and says nothing.

        Without ``now`` the clock is read to the hour, and the result is kept until the graph
        changes: the prompt asks for it at every step, and a stable answer keeps the KV cache."""
        if now is None:
            now = self._clock.now().replace(minute=0, second=0, microsecond=0)
            token = (self._db.scalar("PRAGMA data_version"), self._generation, now, limit)
            cached = self._top_cache.get(agent_id)
            if cached is not None and cached[0] == token:
                return cached[1]
            result = self.top_entities(agent_id, limit, now=now)
            self._top_cache[agent_id] = (token, result)
            return result
        rows = self._db.query(
            f"""
            SELECT {_CANON} AS root, COUNT(*), MAX(m.at)
            FROM graph_mentions m JOIN graph_entities e ON e.id = m.entity_id
            WHERE m.agent_id = ? GROUP BY root
            """,
            (agent_id,),
        )
        scored = []
        for root, count, last in rows:
            age_days = max(0.0, (now - parse_iso(last)).total_seconds() / 86400)
            scored.append((count * math.pow(0.5, age_days / RECENCY_HALF_LIFE_DAYS), int(root)))
        scored.sort(key=lambda item: (-item[0], item[1]))
        result = []
        for score, root in scored:
            entity = self.entity(root)
            if entity.deleted or entity.kind == SELF_KIND:
                continue
            result.append((entity, score))
            if len(result) >= limit:
                break
        return result

    # --- user edits (each undoable) ------------------------------------------------------------
    def _snapshot(self, table: str, where: str, params: Sequence[Any]) -> list[tuple[str, dict[str, Any]]]:
        cursor = self._db.execute(f"SELECT * FROM {table} WHERE {where}", tuple(params))
        columns = [d[0] for d in cursor.description]
        return [(table, dict(zip(columns, row))) for row in cursor.fetchall()]

    def rename(self, entity_id: int, name: str, kind: str | None = None) -> Edit:
        """Give the entity a new canonical name (and kind). A name another entity already has is
        refused: merge them instead."""
        root = self.root(entity_id)
        if not names.valid_name(name):
            raise ToolError(f"{name!r} is not a usable entity name")
        key = names.name_key(name)
        other = self._db.query_one("SELECT id, COALESCE(merged_into, id) FROM graph_entities WHERE agent_id = (SELECT agent_id FROM graph_entities WHERE id = ?) AND key = ?", (root, key))
        if other is not None and int(other[1]) != root:
            raise ToolError(f"Another entity is already called {names.display_name(name)!r}: merge the two instead")
        edit = Edit(f"rename to {names.display_name(name)}", self._snapshot("graph_entities", "id = ?", (root,)))
        old_name = self.entity(root).name
        with self._db.transaction():
            if other is not None and int(other[0]) != root:
                # The new name is one of this entity's aliases: the alias row gives its key up.
                edit.before += self._snapshot("graph_entities", "id = ?", (int(other[0]),))
                self._db.execute("UPDATE graph_entities SET key = key || ' #' || id WHERE id = ?", (int(other[0]),))
            self._db.execute(
                "UPDATE graph_entities SET name = ?, key = ?, kind = COALESCE(?, kind), author = 'user' WHERE id = ?",
                (names.display_name(name), key, kind, root),
            )
            self._record_edit(self._agent_of(root), ENTITY_CHANGE, root, "update", edit, source="user", before=old_name,
                              after=names.display_name(name))
        self._forget_vectors(self._agent_of(root))
        return edit

    def merge(self, entity_id: int, into_id: int) -> Edit:
        """Make ``entity_id`` (and its aliases) aliases of ``into_id``."""
        source, target = self.root(entity_id), self.root(into_id)
        if source == target:
            raise ToolError("An entity cannot be merged into itself")
        source_name, target_name = self.entity(source).name, self.entity(target).name
        edit = Edit(f"merge {source_name} into {target_name}", self._snapshot("graph_entities", "id = ? OR merged_into = ?", (source, source)))
        with self._db.transaction():
            self._db.execute("UPDATE graph_entities SET merged_into = ? WHERE id = ? OR merged_into = ?", (target, source, source))
            edit.before += self._reconcile(target)
            self._record_edit(self._agent_of(target), ENTITY_CHANGE, source, "update", edit, source="user", before=source_name,
                              after=f"{source_name} (an alias of {target_name})", label=source_name, note=edit.label)
        self._forget_vectors(self._agent_of(target))
        return edit

    def _reconcile(self, root: int) -> list[tuple[str, dict[str, Any]]]:
        """After a merge, the newest of the entity's current facts for a single-valued relation
        closes the others ("Ann lives in London" and "Annie moved to Paris" are now one person).
        Returns the facts' previous rows, for undo."""
        current = [f for f in self.facts(root, current_only=True) if f.subject_id == root and single_valued(f.relation)]
        by_relation: dict[str, list[Fact]] = {}
        for fact in current:
            by_relation.setdefault(relation_key(fact.relation), []).append(fact)
        before: list[tuple[str, dict[str, Any]]] = []
        for facts in by_relation.values():
            facts.sort(key=lambda f: (f.valid_from, f.id))
            for older, newer in zip(facts, facts[1:]):
                if older.object_id != newer.object_id:
                    before += self._snapshot("graph_facts", "id = ?", (older.id,))
                    self._db.execute("UPDATE graph_facts SET valid_to = ? WHERE id = ?", (iso(newer.valid_from), older.id))
        return before

    def split(self, alias_id: int) -> Edit:
        """Undo a merge for one alias: it becomes an entity of its own again, taking back the
        mentions and facts that were written against it."""
        row = self._db.query_one("SELECT merged_into, name FROM graph_entities WHERE id = ?", (alias_id,))
        if row is None or row[0] is None:
            raise ToolError("Only an alias can be split off")
        edit = Edit(f"split {row[1]} off", self._snapshot("graph_entities", "id = ?", (alias_id,)))
        with self._db.transaction():
            self._db.execute("UPDATE graph_entities SET merged_into = NULL, deleted = 0 WHERE id = ?", (alias_id,))
            self._record_edit(self._agent_of(alias_id), ENTITY_CHANGE, alias_id, "update", edit, source="user",
                              before=self.state_text("graph_entities", edit.before[0][1]), after=row[1], label=row[1], note=edit.label)
        self._forget_vectors(self._agent_of(alias_id))
        return edit

    def alias_rows(self, entity_id: int) -> list[tuple[int, str]]:
        root = self.root(entity_id)
        return [(int(r[0]), r[1]) for r in self._db.query("SELECT id, name FROM graph_entities WHERE merged_into = ? ORDER BY name", (root,))]

    def delete_entity(self, entity_id: int) -> Edit:
        """Hide the entity and its facts. The row stays, so the extractor does not bring the name
        back and ``undo`` restores everything."""
        root = self.root(entity_id)
        name = self.entity(root).name
        edit = Edit(f"delete {name}", self._snapshot("graph_entities", "id = ?", (root,)))
        with self._db.transaction():
            self._db.execute("UPDATE graph_entities SET deleted = 1 WHERE id = ?", (root,))
            self._record_edit(self._agent_of(root), ENTITY_CHANGE, root, "delete", edit, source="user", before=name, after=None)
        self._forget_vectors(self._agent_of(root))
        return edit

    def insert_fact(self, agent_id: int, subject: str, relation: str, obj: str, *, author: str, message_id: int | None = None,
                    valid_from: datetime | None = None, cause: Any = None) -> tuple[Fact, Edit]:
        """A fact from the agent or the user, by names (unknown names become entities). Recorded
        as one change (with the entities it created and the facts it closed); ``cause`` is the
        history's Cause of an agent's call."""
        if not clean_relation(relation):
            raise ToolError("relation must not be empty")
        with self._db.transaction():
            first_entity = int(self._db.scalar("SELECT COALESCE(MAX(id), 0) FROM graph_entities"))
            # Known names (a deleted one comes back): their rows as they were, for undo.
            known = [self.find(agent_id, name, include_deleted=True) for name in (subject, obj)]
            entity_rows = [row for e in known if e is not None for row in self._snapshot("graph_entities", "id = ?", (e.id,))]
            with self._one_change():
                subject_id = self._resolve_named(agent_id, subject, author)
                object_id = self._resolve_named(agent_id, obj, author)
                if self.root(subject_id) == self.root(object_id):
                    raise ToolError("subject and object must be different entities")
                before = self._snapshot("graph_facts", "agent_id = ? AND valid_to IS NULL", (agent_id,))
                fact_id = self.add_fact(agent_id, subject_id, relation, object_id, author=author, valid_from=valid_from, message_id=message_id)
                assert fact_id is not None
                new_entities = [("graph_entities", int(r[0])) for r in self._db.query(
                    "SELECT id FROM graph_entities WHERE agent_id = ? AND id > ?", (agent_id, first_entity))]
            fact = self.fact(fact_id)
            assert fact is not None
            edit = Edit(f"add {fact.subject} {fact.relation} {fact.object}", entity_rows + before, [("graph_facts", fact_id), *new_entities])
            if any(row["id"] == fact_id for _t, row in before):
                edit.inserted = new_entities  # it was known already: nothing of it to take back
            created = [name for _t, entity_id in new_entities if (name := self._row("graph_entities", entity_id)) is not None]
            note = "new entities: " + ", ".join(str(r["name"]) for r in created) if created else ""
            self._record_edit(agent_id, FACT_CHANGE, fact_id, "create", edit, source=author, before=None,
                              after=self._fact_text(fact_id), message_id=message_id, note=note, cause=cause)
        return fact, edit

    def _resolve_named(self, agent_id: int, name: str, author: str) -> int:
        found = self.find(agent_id, name, include_deleted=True)
        if found is not None:
            if found.deleted:
                self._db.execute("UPDATE graph_entities SET deleted = 0 WHERE id = ?", (found.id,))
            return found.id
        entity_id = self.resolve(agent_id, name, "thing", author=author)
        if entity_id is None:
            raise ToolError(f"{name!r} is not a usable entity name (2 to {names.MAX_NAME_CHARS} characters, with letters)")
        return entity_id

    def edit_fact(self, fact_id: int, *, relation: str | None = None, valid_from: datetime | None = None,
                  valid_to: datetime | None | str = "keep") -> Edit:
        """Correct a fact's relation or dates (``valid_to=None`` reopens it); it becomes the user's."""
        fact = self.fact(fact_id)
        if fact is None:
            raise ToolError(f"No fact with id {fact_id}")
        if relation is not None and not clean_relation(relation):
            raise ToolError("relation must not be empty")
        edit = Edit(f"edit {fact.subject} {fact.relation} {fact.object}", self._snapshot("graph_facts", "id = ?", (fact_id,)))
        before = self._fact_text(fact_id)
        with self._db.transaction():
            if relation is not None:
                self._db.execute("UPDATE graph_facts SET relation = ? WHERE id = ?", (clean_relation(relation), fact_id))
            if valid_from is not None:
                self._db.execute("UPDATE graph_facts SET valid_from = ? WHERE id = ?", (iso(valid_from), fact_id))
            if valid_to != "keep":
                self._db.execute("UPDATE graph_facts SET valid_to = ? WHERE id = ?", (iso(valid_to) if valid_to else None, fact_id))  # type: ignore[arg-type]
            self._db.execute("UPDATE graph_facts SET author = 'user' WHERE id = ?", (fact_id,))
            self._record_edit(fact.agent_id, FACT_CHANGE, fact_id, "update", edit, source="user", before=before, after=self._fact_text(fact_id))
        return edit

    def delete_fact(self, fact_id: int) -> Edit:
        fact = self.fact(fact_id)
        if fact is None:
            raise ToolError(f"No fact with id {fact_id}")
        edit = Edit(f"delete {fact.subject} {fact.relation} {fact.object}", self._snapshot("graph_facts", "id = ?", (fact_id,)))
        with self._db.transaction():
            self._db.execute("UPDATE graph_facts SET deleted = 1 WHERE id = ?", (fact_id,))
            self._record_edit(fact.agent_id, FACT_CHANGE, fact_id, "delete", edit, source="user", before=self._fact_text(fact_id), after=None)
        return edit

    def undo(self, edit: Edit) -> None:
        """Take one edit back exactly (rows the edit inserted go). The app's Knowledge panel
        undoes through the memory history instead (a recorded revert that survives a restart);
        this is for callers without a history."""
        agents = set()
        with self._db.transaction():
            watched = self._edit_rows(edit)
            now = self.row_states((t, i) for t, i, _r in watched)
            for table, row_id in reversed(edit.inserted):
                if table == "graph_facts":
                    self._db.execute("DELETE FROM graph_facts WHERE id = ?", (row_id,))
            for table, row_id in reversed(edit.inserted):
                if table == "graph_entities":
                    # An entity the edit created may have been mentioned since: hide it instead.
                    used = self._db.scalar("SELECT 1 FROM graph_mentions WHERE entity_id = ? UNION SELECT 1 FROM graph_facts WHERE subject_id = ? OR object_id = ?", (row_id, row_id, row_id))
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
                changed = self._changed_rows(now)
                if agent is not None and changed[0]:
                    kind = FACT_CHANGE if table == "graph_facts" else ENTITY_CHANGE
                    self._record(int(agent), kind, row_id, "update", source="user", before=edit.label, after=f"undone: {edit.label}",
                                 note="undo in the Knowledge panel", rows=changed)
        for agent in agents:
            self._forget_vectors(agent)

    def _agent_of(self, entity_id: int) -> int:
        return int(self._db.scalar("SELECT agent_id FROM graph_entities WHERE id = ?", (entity_id,)))


def _found_in(message_id: int | None, passage_id: int | None) -> str:
    """A history note for a row taken from an archival passage (a message is linked instead)."""
    return f"found in archival passage {passage_id}" if passage_id is not None and message_id is None else ""


def _normalised(vectors: Iterable) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)
