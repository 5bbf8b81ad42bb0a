"""Find everything of one agent's memory that is about a person or topic, changing nothing.

Three ways in, as the user would expect of "forget Eva":

* words: the phrases whole (matching.py) in every text the agent owns, wherever the schema keeps
  it (schema_text.py walks every table and text column: no list of places to fall behind), and
  their word forms through the same FTS5 indexes conversation and archival search use;
* meaning: messages and passages whose stored vector is at least ``threshold`` cosine-similar to
  the request (only rows already embedded: a preview writes nothing);
* the knowledge graph: the entity the request names, its aliases (whose names then count as words
  too), entities whose name holds the phrases, their facts and mentions.

Then what hangs on those: graph facts and mentions taken from a found message or passage, the
automatic-recall lines that showed one, extraction queue rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from memdesk.core.embedding import Embedder
from memdesk.core.graph import names
from memdesk.core.memory.forget.matching import Phrases
from memdesk.core.memory.forget.other_text import Place, describe
from memdesk.core.memory.forget.schema_text import matching_rows, text_tables
from memdesk.core.retrieval.vector_index import TABLES as VECTOR_TABLES
from memdesk.core.storage import Database

#: The kinds of memory a forget reaches, in the order a preview lists them.
MESSAGES, PASSAGES, DOCUMENTS, CORE = "messages", "passages", "documents", "core_memory"
ENTITIES, FACTS, MENTIONS = "graph_entities", "graph_facts", "graph_mentions"
HISTORY, RECALL, PROPOSALS, SUMMARY = "history", "recall_events", "proposals", "summary"
OTHER, FILES = "other_text", "files"
KINDS = (
    MESSAGES,
    PASSAGES,
    DOCUMENTS,
    CORE,
    SUMMARY,
    ENTITIES,
    FACTS,
    MENTIONS,
    HISTORY,
    RECALL,
    PROPOSALS,
    OTHER,
    FILES,
)
LABELS = {
    MESSAGES: "conversation messages",
    PASSAGES: "archival passages",
    DOCUMENTS: "documents",
    CORE: "core-memory lines",
    SUMMARY: "conversation summary",
    ENTITIES: "knowledge-graph entities",
    FACTS: "knowledge-graph facts",
    MENTIONS: "knowledge-graph mentions",
    HISTORY: "memory-history entries",
    RECALL: "automatic-recall lines",
    PROPOSALS: "consolidation proposals",
    OTHER: "other texts (system prompt, block descriptions, imported details and tools)",
    FILES: "lines in MemDesk's files (logs, messages not yet delivered, the agent's own files)",
}
#: Tables whose matching rows are one of the kinds (their id is the rowid).
TABLE_KINDS = {
    "messages": MESSAGES,
    "passages": PASSAGES,
    "documents": DOCUMENTS,
    "graph_entities": ENTITIES,
    "graph_facts": FACTS,
    "memory_history": HISTORY,
    "recall_shown": RECALL,
    "consolidation_changes": PROPOSALS,
}
#: Columns whose matching lines (or sentences) go and the rest stays: read apart (core lines, summary).
LINE_COLUMNS = {("memory_blocks", "value"), ("agents", "summary")}


@dataclass
class Found:
    """Row ids per kind (core lines: (block id, line) pairs), for one agent."""

    agent_id: int
    phrases: Phrases
    messages: set[int] = field(default_factory=set)
    passages: set[int] = field(default_factory=set)
    documents: set[int] = field(default_factory=set)
    core_lines: list[tuple[int, str, str]] = field(default_factory=list)  # (block id, label, line)
    summary: bool = False
    entities: set[int] = field(default_factory=set)
    facts: set[int] = field(default_factory=set)
    mentions: set[int] = field(default_factory=set)
    history: set[int] = field(default_factory=set)
    recall: set[int] = field(default_factory=set)
    proposals: set[int] = field(default_factory=set)
    queue: set[int] = field(default_factory=set)
    similar: set[tuple[str, int]] = field(default_factory=set)  # found by meaning alone
    other: list[Place] = field(default_factory=list)  # texts outside the kinds above
    files: dict[str, int] = field(default_factory=dict)  # data-folder file -> lines (Forgetting fills it)

    def counts(self) -> dict[str, int]:
        return {
            MESSAGES: len(self.messages),
            PASSAGES: len(self.passages),
            DOCUMENTS: len(self.documents),
            CORE: len(self.core_lines),
            SUMMARY: int(self.summary),
            ENTITIES: len(self.entities),
            FACTS: len(self.facts),
            MENTIONS: len(self.mentions),
            HISTORY: len(self.history),
            RECALL: len(self.recall),
            PROPOSALS: len(self.proposals),
            OTHER: len(self.other),
            FILES: sum(self.files.values()),
        }

    @property
    def empty(self) -> bool:
        return not any(self.counts().values())


#: The Found field of each kind a table's rows are.
_FIELDS = {
    MESSAGES: "messages",
    PASSAGES: "passages",
    DOCUMENTS: "documents",
    ENTITIES: "entities",
    FACTS: "facts",
    HISTORY: "history",
    RECALL: "recall",
    PROPOSALS: "proposals",
}


def _marks(ids: Iterable[int]) -> tuple[str, list[int]]:
    ids = list(ids)
    return ",".join("?" * len(ids)), ids


def _in(db: Database, sql: str, ids: set[int], *params) -> set[int]:
    """``sql`` has one ``{}`` for an IN list; run it in chunks (SQLite's variable limit)."""
    found: set[int] = set()
    ordered = sorted(ids)
    for start in range(0, len(ordered), 500):
        marks, chunk = _marks(ordered[start : start + 500])
        found |= {int(r[0]) for r in db.query(sql.format(marks), (*params, *chunk))}
    return found


class Finder:
    def __init__(self, db: Database, embedder: Embedder | None = None, *, threshold: float) -> None:
        """``threshold``: the cosine similarity from which a message or passage counts as about the
        request (the forget_similarity setting, measured where it is declared)."""
        self._db = db
        self._embedder = embedder
        self.threshold = threshold

    def find(self, agent_id: int, text: str) -> Found:
        db = self._db
        entities = self._named_entities(agent_id, text)
        alias_names = (
            [
                r[0]
                for r in db.query(
                    f"SELECT name FROM graph_entities WHERE id IN ({_marks(entities)[0]})", sorted(entities)
                )
            ]
            if entities
            else []
        )
        phrases = Phrases([text, *alias_names])
        found = Found(agent_id, phrases)
        if not phrases:
            return found
        match = phrases.register(db)
        found.entities = set(entities)
        self._walk(found, match)
        found.entities |= (
            {
                int(r[0])
                for r in db.query(
                    f"SELECT id FROM graph_entities WHERE merged_into IN ({_marks(found.entities)[0]})",
                    sorted(found.entities),
                )
            }
            if found.entities
            else set()
        )
        found.messages |= self._fts(agent_id, "messages", phrases)
        found.passages |= self._fts(agent_id, "passages", phrases)
        found.passages |= _in(db, "SELECT id FROM passages WHERE document_id IN ({})", found.documents)
        for kind, ids in self._similar(agent_id, text).items():
            new = ids - getattr(found, kind)
            found.similar |= {(kind, i) for i in new}
            getattr(found, kind).update(new)

        for block_id, label, value in db.query(
            "SELECT id, label, value FROM memory_blocks WHERE agent_id = ?", (agent_id,)
        ):
            found.core_lines += [(block_id, label, part) for part in phrases.matching_parts(value)]
        row = db.query_one("SELECT summary FROM agents WHERE id = ?", (agent_id,))
        found.summary = bool(row and phrases.matches(row[0]))

        found.facts |= _in(db, "SELECT id FROM graph_facts WHERE subject_id IN ({})", found.entities)
        found.facts |= _in(db, "SELECT id FROM graph_facts WHERE object_id IN ({})", found.entities)
        found.facts |= _in(db, "SELECT id FROM graph_facts WHERE message_id IN ({})", found.messages)
        found.facts |= _in(db, "SELECT id FROM graph_facts WHERE passage_id IN ({})", found.passages)
        found.mentions = _in(db, "SELECT id FROM graph_mentions WHERE entity_id IN ({})", found.entities)
        found.mentions |= _in(db, "SELECT id FROM graph_mentions WHERE message_id IN ({})", found.messages)
        found.mentions |= _in(db, "SELECT id FROM graph_mentions WHERE passage_id IN ({})", found.passages)
        found.queue = _in(
            db, "SELECT id FROM graph_queue WHERE source_kind = 'message' AND source_id IN ({})", found.messages
        )
        found.queue |= _in(
            db, "SELECT id FROM graph_queue WHERE source_kind = 'passage' AND source_id IN ({})", found.passages
        )

        refs = [f"message:{i}" for i in found.messages] + [f"passage:{i}" for i in found.passages]
        for start in range(0, len(refs), 500):
            chunk = refs[start : start + 500]
            found.recall |= {
                int(r[0])
                for r in db.query(
                    f"SELECT id FROM recall_shown WHERE agent_id = ? AND ref IN ({','.join('?' * len(chunk))})",
                    (agent_id, *chunk),
                )
            }
        return found

    def _walk(self, found: Found, match: str) -> None:
        """The phrases in every text column of every table the agent owns (schema_text.py)."""
        for table in text_tables(self._db):
            kind = TABLE_KINDS.get(table.name)
            for key, columns in matching_rows(self._db, table, found.agent_id, match):
                for column in columns:
                    if (table.name, column) in LINE_COLUMNS:
                        continue  # read apart: which lines go
                    if kind is not None:
                        getattr(found, _FIELDS[kind]).add(int(key[0]))
                    else:
                        found.other.append(Place(table, column, key))

    def _named_entities(self, agent_id: int, text: str) -> set[int]:
        """The entity the request names (by its name or an alias) with all its alias rows."""
        key = names.name_key(text)
        if not key:
            return set()
        row = self._db.query_one(
            "SELECT COALESCE(merged_into, id) FROM graph_entities WHERE agent_id = ? AND key = ?", (agent_id, key)
        )
        if row is None:
            return set()
        root = int(row[0])
        return {root} | {
            int(r[0]) for r in self._db.query("SELECT id FROM graph_entities WHERE merged_into = ?", (root,))
        }

    def _fts(self, agent_id: int, kind: str, phrases: Phrases) -> set[int]:
        """Word forms, through the stemming index search uses ("camped" for "camping")."""
        table, owner = ("messages_fts", "messages") if kind == "messages" else ("passages_fts", "passages")
        rows = self._db.query(
            f"SELECT f.rowid FROM {table} f JOIN {owner} o ON o.id = f.rowid WHERE {table} MATCH ? AND o.agent_id = ?",
            (phrases.fts_query(), agent_id),
        )
        return {int(r[0]) for r in rows}

    def _similar(self, agent_id: int, text: str) -> dict[str, set[int]]:
        """Rows whose stored vector is close in meaning to the request."""
        if self._embedder is None or self.threshold >= 1.0:
            return {}
        model = self._db.query_one("SELECT model_id, dimension FROM embedding_space WHERE id = 1")
        if model is None or (model[0], model[1]) != (self._embedder.model_id, self._embedder.dimension):
            return {}  # vectors of another model: not comparable
        query = np.asarray(self._embedder.embed([text])[0], dtype=np.float32)
        out: dict[str, set[int]] = {}
        for kind, table in VECTOR_TABLES.items():
            if not self._db.has_table(table):
                continue
            ids: set[int] = set()
            # One scan (a vec0 range query rescans the table each time), read in slices so a
            # million vectors never sit in memory at once.
            cursor = self._db.execute(f"SELECT rowid, embedding FROM {table} WHERE agent_id = ?", (agent_id,))
            while rows := cursor.fetchmany(20_000):
                matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
                ids |= {int(rows[i][0]) for i in np.nonzero(matrix @ query >= self.threshold)[0]}
            out[kind] = ids
        return out


def samples(db: Database, found: Found, per_kind: int = 3, width: int = 120) -> dict[str, list[str]]:
    """A few of each kind, as people read them (shown in the preview; never logged)."""

    def cut(text: str | None) -> str:
        line = " ".join(str(text or "").split())
        return line if len(line) <= width else line[: width - 1] + "…"

    def first(sql: str, ids: set[int], render) -> list[str]:
        chosen = sorted(ids)[:per_kind]
        if not chosen:
            return []
        marks, chunk = _marks(chosen)
        return [cut(render(row)) for row in db.query(sql.format(marks), chunk)]

    def message_text(row) -> str:
        text = row[1] or row[0]
        try:
            data = json.loads(row[0])
            if isinstance(data, dict):
                params = data["params"] if isinstance(data.get("params"), dict) else {}
                text = row[1] or data.get("message") or params.get("message") or params.get("inner_thoughts") or row[0]
        except (json.JSONDecodeError, TypeError):
            pass
        return str(text)

    return {
        MESSAGES: first(
            "SELECT content, search_text FROM messages WHERE id IN ({}) ORDER BY id", found.messages, message_text
        ),
        PASSAGES: first("SELECT text FROM passages WHERE id IN ({}) ORDER BY id", found.passages, lambda r: r[0]),
        DOCUMENTS: first("SELECT title FROM documents WHERE id IN ({}) ORDER BY id", found.documents, lambda r: r[0]),
        CORE: [cut(f"{label}: {line}") for _, label, line in found.core_lines[:per_kind]],
        SUMMARY: ["the conversation summary (the sentences that mention it)"] if found.summary else [],
        ENTITIES: first("SELECT name FROM graph_entities WHERE id IN ({}) ORDER BY id", found.entities, lambda r: r[0]),
        FACTS: first(
            "SELECT s.name, f.relation, o.name FROM graph_facts f JOIN graph_entities s ON s.id = f.subject_id"
            " JOIN graph_entities o ON o.id = f.object_id WHERE f.id IN ({}) ORDER BY f.id",
            found.facts,
            lambda r: f"{r[0]} {r[1]} {r[2]}",
        ),
        MENTIONS: first(
            "SELECT e.name, m.at FROM graph_mentions m JOIN graph_entities e ON e.id = m.entity_id WHERE m.id IN ({})"
            " ORDER BY m.id",
            found.mentions,
            lambda r: f"{r[0]} ({r[1][:10]})",
        ),
        HISTORY: first(
            "SELECT source, action, target_kind, target_label FROM memory_history WHERE id IN ({}) ORDER BY id",
            found.history,
            lambda r: f"{r[0]} {r[1]} {r[2]} {r[3]}",
        ),
        RECALL: first("SELECT text FROM recall_shown WHERE id IN ({}) ORDER BY id", found.recall, lambda r: r[0]),
        PROPOSALS: first(
            "SELECT function, arguments FROM consolidation_changes WHERE id IN ({}) ORDER BY id",
            found.proposals,
            lambda r: f"{r[0]} {r[1]}",
        ),
        OTHER: [describe(db, place, found.phrases, width) for place in found.other[:per_kind]],
        FILES: [
            cut(f"{name}: {lines} line{'s' if lines != 1 else ''}")
            for name, lines in sorted(found.files.items())[:per_kind]
        ],
    }
