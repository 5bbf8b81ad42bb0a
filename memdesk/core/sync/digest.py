"""One hash of what sync keeps equal on every device: devices that have exchanged everything show
the same (``memdesk sync status --json``, and the tests' check that devices converged). Local ids,
vectors, full-text indexes and device-local state are left out; they are derived here."""

from __future__ import annotations

import hashlib
import json

from memdesk.core.storage import Database

_QUERIES = (
    "SELECT uid, name, system_prompt FROM agents ORDER BY uid",
    "SELECT a.uid, b.label, b.value, b.char_limit, b.description, b.read_only FROM memory_blocks b"
    " JOIN agents a ON a.id = b.agent_id ORDER BY a.uid, b.label",
    "SELECT m.uid, a.uid, m.created_at, m.role, m.kind, m.author, m.content, m.search_text, m.function_name"
    " FROM messages m JOIN agents a ON a.id = m.agent_id ORDER BY m.uid",
    "SELECT p.uid, a.uid, p.text, p.created_at, p.tags FROM passages p JOIN agents a ON a.id = p.agent_id"
    " ORDER BY p.uid",
    "SELECT d.uid, d.title, d.content_hash FROM documents d ORDER BY d.uid",
)


def synced_rows(db: Database) -> list[list[str]]:
    """What the digest hashes, table by table, one JSON line per row."""
    return [[json.dumps(list(row), ensure_ascii=False) for row in db.query(query)] for query in _QUERIES]


def synced_digest(db: Database) -> str:
    hasher = hashlib.sha256()
    for table in synced_rows(db):
        for line in table:
            hasher.update(line.encode())
            hasher.update(b"\n")
        hasher.update(b"--\n")
    return hasher.hexdigest()
