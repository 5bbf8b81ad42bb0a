"""Erasing messages, passages and core-memory text for good, at the user's request (memdesk.core.memory.forget): the
rows with their vectors, and no copy of their text in the history (the caller records that
something was forgotten, never what). Their FTS5 rows follow through the m001 triggers.

Memory owns these rows (tests/memory/test_ownership.py); this is the one writer that removes text
instead of recording it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memdesk.core.retrieval import vector_codes
from memdesk.core.retrieval.vector_index import TABLES as VECTOR_TABLES
from memdesk.core.storage import Database

_BATCH = 500


def _chunks(ids: Iterable[int]):
    ordered = sorted(set(ids))
    for start in range(0, len(ordered), _BATCH):
        yield ordered[start : start + _BATCH]


def _delete_vectors(db: Database, kind: str, ids: Iterable[int]) -> None:
    table = VECTOR_TABLES[kind]
    if not db.has_table(table):
        return
    ids = sorted(set(ids))
    for chunk in _chunks(ids):
        db.execute(f"DELETE FROM {table} WHERE rowid IN ({','.join('?' * len(chunk))})", chunk)
    # The search form (sign bits, float16 copies) is derived from the vector and goes with it: a
    # message kept as a placeholder must not still be found by what it said. (A snapshot taken
    # before the form existed, purged by a forget, has none.)
    if db.has_table(vector_codes.HALF_TABLES[kind]):
        vector_codes.remove(db, kind, ids)


def erase_passages(db: Database, passage_ids: Iterable[int]) -> None:
    """Delete passages and their vectors (inside the caller's transaction)."""
    ids = list(passage_ids)
    _delete_vectors(db, "passages", ids)
    for chunk in _chunks(ids):
        db.execute(f"DELETE FROM passages WHERE id IN ({','.join('?' * len(chunk))})", chunk)


def erase_messages(db: Database, message_ids: Iterable[int]) -> None:
    """Delete messages and their vectors (retention; inside the caller's transaction)."""
    ids = list(message_ids)
    _delete_vectors(db, "messages", ids)
    for chunk in _chunks(ids):
        db.execute(f"DELETE FROM messages WHERE id IN ({','.join('?' * len(chunk))})", chunk)


def rewrite_messages(db: Database, rows: Sequence[tuple[int, str, str, str | None]]) -> None:
    """Give messages new text, (id, content, search_text, author), dropping their vectors: the
    new text is embedded again when a search needs it."""
    _delete_vectors(db, "messages", [row[0] for row in rows])
    db.executemany(
        "UPDATE messages SET content = ?, search_text = ?, author = ?, embedded = 0 WHERE id = ?",
        [(content, search_text, author, message_id) for message_id, content, search_text, author in rows],
    )


def rewrite_block(db: Database, block_id: int, value: str, *, at: str, by: str) -> None:
    """Give a core-memory block its text without what was forgotten; bumps its version so an open
    editor sees the change (core_memory.py's lost-update check)."""
    db.execute(
        "UPDATE memory_blocks SET value = ?, version = version + 1, updated_at = ?, updated_by = ? WHERE id = ?",
        (value, at, by, block_id),
    )


def erase_block(db: Database, block_id: int) -> None:
    """Delete a core-memory block whose very label names what is forgotten."""
    db.execute("DELETE FROM memory_blocks WHERE id = ?", (block_id,))
