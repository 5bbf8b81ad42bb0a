"""Remove what the finder found, everywhere, in one transaction; then scrub the file.

Rows go with their index rows: the FTS5 triggers drop a deleted or rewritten row's terms, vec0
rows (no foreign keys) are deleted explicitly (memory/erase.py, the owner of those rows), and the
``vector_generation`` counters move so
every in-memory vector copy and ranking cache reloads. A conversation message is not deleted but
rewritten as a placeholder that keeps its shape (who spoke, when, which function) with every
piece of text replaced by ``PLACEHOLDER``: the transcript and the model's prompt still read as a
conversation ("You: [forgotten]"), and ids other rows point at stay valid.

``scrub`` then makes the bytes leave the disk: FTS5 keeps a deleted term in its older segments
until they are merged ('optimize'), freed pages keep their bytes until overwritten
(``secure_delete``) and the file is rewritten (VACUUM), and the WAL still holds the old pages until
a TRUNCATE checkpoint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from memdesk.core.base.clock import Clock, iso
from memdesk.core.memory.erase import erase_passages, rewrite_block, rewrite_messages
from memdesk.core.memory.forget.finder import Found, _marks
from memdesk.core.memory.forget.matching import Phrases
from memdesk.core.memory.forget.other_text import remove_places
from memdesk.core.memory.history import DELETE, FORGET, USER, MemoryHistory
from memdesk.core.retrieval.vector_index import TABLES as VECTOR_TABLES
from memdesk.core.storage import Database

PLACEHOLDER = "[forgotten]"
#: The memory history's kind for a forget: one entry per forget, with counts, never the text.
FORGET_KIND = FORGET
#: JSON keys of stored events and calls that carry structure, not anybody's words.
_STRUCTURE = frozenset({"type", "function", "status", "time", "last_login", "request_heartbeat"})


def placeholder_content(content: str, phrases: Phrases | None = None) -> str:
    """The stored event or call with every piece of text replaced, its shape kept (a key that
    holds ``phrases`` goes: a key is text too)."""
    try:
        data = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        return PLACEHOLDER
    if not isinstance(data, dict):
        return PLACEHOLDER
    return json.dumps(_blank(data, phrases=phrases), ensure_ascii=False)


def _blank(value: Any, key: str = "", phrases: Phrases | None = None) -> Any:
    if isinstance(value, dict):
        return {k: _blank(v, k, phrases) for k, v in value.items() if phrases is None or not phrases.matches(k)}
    if isinstance(value, list):
        return [PLACEHOLDER] if value else []
    if isinstance(value, str) and key not in _STRUCTURE:
        return PLACEHOLDER
    return value


@dataclass(frozen=True)
class Removed:
    """What one forget removed, per kind (finder.KINDS)."""

    counts: dict[str, int]

    def describe(self) -> str:
        from memdesk.core.memory.forget.finder import LABELS

        parts = [f"{n} {LABELS[kind]}" for kind, n in self.counts.items() if n]
        return "Forgot " + (", ".join(parts) if parts else "nothing")


def _chunks(ids: set[int] | list[int], size: int = 500):
    ordered = sorted(ids)
    for start in range(0, len(ordered), size):
        yield ordered[start : start + size]


def _delete(db: Database, table: str, ids: set[int], column: str = "id") -> None:
    for chunk in _chunks(ids):
        marks, values = _marks(chunk)
        db.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", values)


def remove(db: Database, found: Found, clock: Clock, *, history: MemoryHistory | None = None) -> Removed:
    """Remove everything ``found`` lists, in one transaction, and record that it happened."""
    counts = found.counts()
    agent_id = found.agent_id
    phrases = found.phrases
    with db.transaction():
        doc_passages: set[int] = set()
        for chunk in _chunks(found.documents):
            marks, values = _marks(chunk)
            doc_passages |= {
                int(r[0]) for r in db.query(f"SELECT id FROM passages WHERE document_id IN ({marks})", values)
            }
        passages = found.passages | doc_passages
        # Graph rows before their sources: facts and mentions cascade from entities and passages,
        # but a message is rewritten, not deleted, so what was taken from it goes explicitly.
        _delete(db, "graph_facts", found.facts)
        _delete(db, "graph_mentions", found.mentions)
        _delete(db, "graph_queue", found.queue)
        _delete(db, "graph_entities", found.entities)
        _delete(db, "recall_shown", found.recall)
        _delete(db, "consolidation_changes", found.proposals)
        erase_passages(db, passages)
        _delete(db, "documents", found.documents)
        for chunk in _chunks(found.messages):
            marks, values = _marks(chunk)
            rows = db.query(f"SELECT id, content, search_text, author FROM messages WHERE id IN ({marks})", values)
            rewrite_messages(
                db,
                [
                    (
                        message_id,
                        placeholder_content(content, phrases),
                        PLACEHOLDER if search_text else "",
                        None if phrases.matches(author) else author,
                    )
                    for message_id, content, search_text, author in rows
                ],
            )
        now = iso(clock.now())
        for block_id, value in db.query("SELECT id, value FROM memory_blocks WHERE agent_id = ?", (agent_id,)):
            if phrases.matches(value):
                rewrite_block(db, block_id, phrases.without(value), at=now, by=USER)
        row = db.query_one("SELECT summary FROM agents WHERE id = ?", (agent_id,))
        if row and phrases.matches(row[0]):
            db.execute("UPDATE agents SET summary = ? WHERE id = ?", (phrases.without(row[0]), agent_id))
        # The memory section as the model last saw it holds the old core memory: render it afresh.
        db.execute("UPDATE agents SET memory_view = '' WHERE id = ?", (agent_id,))
        _delete(db, "memory_history", found.history)
        remove_places(db, found.other, phrases)
        for kind in VECTOR_TABLES:
            db.execute(
                "INSERT INTO vector_generation(kind, agent_id, gen) VALUES (?, ?, 1) ON CONFLICT(kind, agent_id) DO"
                " UPDATE SET gen = gen + 1",
                (kind, agent_id),
            )
        result = Removed({kind: n for kind, n in counts.items()})
        if history is not None and not found.empty:
            history.record(
                agent_id,
                FORGET_KIND,
                None,
                DELETE,
                source=USER,
                label="forgotten at your request",
                after=result.describe(),
                after_meta={"counts": counts},
                note="forget",
                prune=False,
            )
    return result


def optimize_indexes(db: Database) -> None:
    """Merge every FTS5 segment: a deleted row's terms otherwise stay in the older segments."""
    for table in ("messages_fts", "passages_fts"):
        if db.has_table(table):
            db.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")


@dataclass(frozen=True)
class Scrubbed:
    checkpointed: bool  # the WAL was emptied (False: another connection was still reading it)


def scrub(db: Database) -> Scrubbed:
    """Make removed bytes leave the file and its WAL (outside any transaction)."""
    previous = db.scalar("PRAGMA secure_delete")
    db.execute("PRAGMA secure_delete = ON")
    try:
        optimize_indexes(db)
        db.execute("VACUUM")
        row = db.query_one("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.execute(f"PRAGMA secure_delete = {int(previous or 0)}")
    return Scrubbed(checkpointed=row is None or int(row[0]) == 0)
