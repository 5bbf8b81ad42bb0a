"""Mentions and facts: where an entity was named, dated facts between entities (a newer one closes
an older one, never deletes it; after a merge, the newest closes the others), the neighbourhood of
an entity and the "top entities" ranking."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from itertools import pairwise
from typing import Any

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.graph.changes import FACT_CHANGE, ChangeRecording
from memdesk.core.graph.entities import Entities
from memdesk.core.graph.records import (
    AUTHORS,
    CANON,
    RECENCY_HALF_LIFE_DAYS,
    SELF_KIND,
    Entity,
    Fact,
    Generation,
    found_in,
)
from memdesk.core.graph.relations import clean_relation, relation_key, single_valued
from memdesk.core.storage import Database


class MentionsAndFacts:
    """The part of ``KnowledgeGraph`` that holds mentions and facts, between the entities that
    ``entities`` finds; ``changes`` records each fact made or closed."""

    def __init__(
        self, db: Database, clock: Clock, entities: Entities, changes: ChangeRecording, generation: Generation
    ) -> None:
        self._db = db
        self._clock = clock
        self._entities = entities
        self._changes = changes
        self._generation = generation
        self._top_cache: dict[int, tuple[tuple, list[tuple[Entity, float]]]] = {}

    # --- mentions --------------------------------------------------------------------------
    def add_mention(
        self,
        agent_id: int,
        entity_id: int,
        *,
        at: datetime,
        message_id: int | None = None,
        passage_id: int | None = None,
    ) -> None:
        self._generation.bump()
        self._db.execute(
            "INSERT INTO graph_mentions(agent_id, entity_id, message_id, passage_id, at) VALUES (?, ?, ?, ?, ?)",
            (agent_id, entity_id, message_id, passage_id, iso(at)),
        )

    def mentions(self, entity_id: int, *, limit: int = 50) -> list[tuple[str, int, datetime]]:
        """Where the entity (or an alias) was mentioned, newest first: (kind, source id, time)."""
        root = self._entities.root(entity_id)
        rows = self._db.query(
            "SELECT m.message_id, m.passage_id, m.at FROM graph_mentions m JOIN graph_entities a ON a.id = m.entity_id"
            " WHERE a.id = ? OR a.merged_into = ? ORDER BY m.at DESC, m.id DESC LIMIT ?",
            (root, root, limit),
        )
        return [
            ("message", r[0], parse_iso(r[2])) if r[0] is not None else ("passage", r[1], parse_iso(r[2])) for r in rows
        ]

    def clear_source(self, *, message_id: int | None = None, passage_id: int | None = None) -> None:
        """Forget what the extractor took from one source, so extracting it again adds nothing twice."""
        column, value = ("message_id", message_id) if message_id is not None else ("passage_id", passage_id)
        self._generation.bump()
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
        subject, obj = self._entities.root(subject_id), self._entities.root(object_id)
        if not key or subject == obj:
            return None
        start = iso(valid_from or self._clock.now())
        same = [
            f
            for f in self._fact_rows("f.agent_id = ? AND f.valid_to IS NULL", (agent_id,), subject=subject)
            if relation_key(f.relation) == key
        ]
        for fact in same:
            if fact.object_id == obj:
                return fact.id
        valid_to = None
        closed = []
        if single_valued(relation):
            for fact in same:
                if iso(fact.valid_from) <= start:
                    closed.append((fact.id, self.fact_text(fact.id), self._changes.row("graph_facts", fact.id)))
                    self._db.execute("UPDATE graph_facts SET valid_to = ? WHERE id = ?", (start, fact.id))
                else:  # the known fact is newer: this one ended when it began
                    valid_to = min(valid_to or iso(fact.valid_from), iso(fact.valid_from))
        cursor = self._db.execute(
            "INSERT INTO graph_facts(agent_id, subject_id, relation, object_id, message_id, passage_id, valid_from,"
            " valid_to, author, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                agent_id,
                subject_id,
                relation,
                object_id,
                message_id,
                passage_id,
                start,
                valid_to,
                author,
                iso(self._clock.now()),
            ),
        )
        fact_id = int(cursor.lastrowid)
        text = self.fact_text(fact_id)
        # Reverting the new fact reopens the facts it closed.
        created_before = [["graph_facts", fact_id, None]] + [
            ["graph_facts", old_id, row] for old_id, _text, row in closed
        ]
        self._changes.record(
            agent_id,
            FACT_CHANGE,
            fact_id,
            "create",
            source=author,
            after=text,
            message_id=message_id,
            note=found_in(message_id, passage_id),
            rows=(created_before, self._changes.row_states((t, i) for t, i, _r in created_before)),
        )
        for old_id, before, row in closed:
            self._changes.record(
                agent_id,
                FACT_CHANGE,
                old_id,
                "update",
                source=author,
                before=before,
                after=self.fact_text(old_id),
                message_id=message_id,
                note=f"closed by the newer fact: {text}",
                rows=([["graph_facts", old_id, row]], self._changes.row_states([("graph_facts", old_id)])),
            )
        return fact_id

    def fact(self, fact_id: int) -> Fact | None:
        found = self._fact_rows("f.id = ?", (fact_id,))
        return found[0] if found else None

    def facts(self, entity_id: int, *, current_only: bool = False) -> list[Fact]:
        """Facts with the entity (or an alias) as subject or object, newest first."""
        root = self._entities.root(entity_id)
        where = "f.agent_id = (SELECT agent_id FROM graph_entities WHERE id = ?)" + (
            " AND f.valid_to IS NULL" if current_only else ""
        )
        return self._fact_rows(where, (root,), touching=root)

    def all_facts(self, agent_id: int) -> list[Fact]:
        return self._fact_rows("f.agent_id = ?", (agent_id,))

    def count(self, agent_id: int) -> tuple[int, int]:
        """(entities, current facts) people can see."""
        entities = self._db.scalar(
            "SELECT COUNT(*) FROM graph_entities WHERE agent_id = ? AND merged_into IS NULL AND deleted = 0",
            (agent_id,),
        )
        return int(entities), len(self._fact_rows("f.agent_id = ? AND f.valid_to IS NULL", (agent_id,)))

    def reconcile(self, root: int) -> list[tuple[str, dict[str, Any]]]:
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
            for older, newer in pairwise(facts):
                if older.object_id != newer.object_id:
                    before += self._changes.snapshot("graph_facts", "id = ?", (older.id,))
                    self._db.execute(
                        "UPDATE graph_facts SET valid_to = ? WHERE id = ?", (iso(newer.valid_from), older.id)
                    )
        return before

    def _fact_rows(
        self, where: str, params: Sequence[Any], *, subject: int | None = None, touching: int | None = None
    ) -> list[Fact]:
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
            Fact(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                r[5],
                r[6],
                r[7],
                r[8],
                parse_iso(r[9]),
                parse_iso(r[10]) if r[10] else None,
                r[11],
            )
            for r in rows
        ]

    def neighbourhood(self, entity_id: int, depth: int = 2) -> tuple[list[int], list[Fact]]:
        """Entities within ``depth`` facts of the entity (breadth first, itself first) and the
        facts between them, newest first within each ring."""
        start = self._entities.root(entity_id)
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
    def top_entities(self, agent_id: int, limit: int, *, now: datetime | None = None) -> list[tuple[Entity, float]]:
        """Entities ranked by frequency x recency: mentions times a half-life decay of the time
        since the last one (memary's entity store, sorted the right way round). The user's own
        entity is left out: it is in every conversation and says nothing.

        Without ``now`` the clock is read to the hour, and the result is kept until the graph
        changes: the prompt asks for it at every step, and a stable answer keeps the KV cache."""
        if now is None:
            now = self._clock.now().replace(minute=0, second=0, microsecond=0)
            token = (self._db.scalar("PRAGMA data_version"), self._generation.value, now, limit)
            cached = self._top_cache.get(agent_id)
            if cached is not None and cached[0] == token:
                return cached[1]
            result = self.top_entities(agent_id, limit, now=now)
            self._top_cache[agent_id] = (token, result)
            return result
        rows = self._db.query(
            f"""
            SELECT {CANON} AS root, COUNT(*), MAX(m.at)
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
            entity = self._entities.entity(root)
            if entity.deleted or entity.kind == SELF_KIND:
                continue
            result.append((entity, score))
            if len(result) >= limit:
                break
        return result

    def fact_text(self, fact_id: int) -> str:
        fact = self.fact(fact_id)
        if fact is None:
            return f"fact {fact_id}"
        until = f" (until {fact.valid_to:%Y-%m-%d})" if fact.valid_to else ""
        return f"{fact.subject} {fact.relation} {fact.object}{until}"
