"""A device's whole synced state as one payload, for a device that joins late or after compaction.

It holds the same records a change file does (so it is applied by the same rules, merging with
what the joining device already has) and, per device, the last change file it includes: the
joiner applies only the files after those. Forgotten terms travel as their digests only.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from memdesk.core.storage import Database
from memdesk.core.sync.capture import (
    DOCUMENT_KEYS,
    FACT_KEYS,
    FACT_SQL,
    IMPORTED_SQL,
    MESSAGE_KEYS,
    PASSAGE_KEYS,
    imported_records,
    named,
)

_MESSAGES = (
    "SELECT m.uid, a.uid, m.created_at, m.role, m.kind, m.author, m.content, m.search_text, m.function_name,"
    " (SELECT s.uid FROM messages s WHERE s.id = m.step_id) FROM messages m JOIN agents a ON a.id = m.agent_id"
    " WHERE m.conversation_id IS NULL ORDER BY m.id"
)
_PASSAGES = (
    "SELECT p.uid, a.uid, p.text, p.created_at, p.tags, d.uid, p.chunk_index, p.page, p.section, p.char_start,"
    " p.char_end FROM passages p JOIN agents a ON a.id = p.agent_id LEFT JOIN documents d ON d.id = p.document_id"
    " ORDER BY p.id"
)
_DOCUMENTS = (
    "SELECT d.uid, a.uid, d.path, d.title, d.content_hash, d.size_bytes, d.mime, d.chunk_count, d.created_at,"
    " d.updated_at FROM documents d JOIN agents a ON a.id = d.agent_id ORDER BY d.id"
)


def whole_state(db: Database, covers: dict[str, int], schema: int, hlc: int) -> dict[str, Any]:
    records: list[dict[str, Any]] = []
    for uid, name, created_at, prompt in db.query("SELECT uid, name, created_at, system_prompt FROM agents"):
        stamp = db.scalar("SELECT hlc FROM sync_row_clock WHERE uid = ?", (uid,)) or 0
        records.append(
            {"t": "a", "uid": uid, "name": name, "created_at": created_at, "system_prompt": prompt, "hlc": stamp}
        )
    for row in db.query(_DOCUMENTS):
        records.append({"t": "d", "agent": row[1], **dict(zip(DOCUMENT_KEYS, (row[0], *row[2:]), strict=True))})
    _grouped(records, "m", db.query(_MESSAGES), MESSAGE_KEYS)
    _grouped(records, "p", db.query(_PASSAGES), PASSAGE_KEYS)
    records.extend(imported_records(db.query(IMPORTED_SQL + " ORDER BY m.id")))
    for row in db.query(
        "SELECT a.uid, v.label, v.edit_id, v.parents, v.value, v.meta FROM sync_block_versions v"
        " JOIN agents a ON a.id = v.agent_id ORDER BY v.edit_id"
    ):
        records.append(
            {
                "t": "b",
                "agent": row[0],
                "label": row[1],
                "edit": row[2],
                "parents": json.loads(row[3]),
                "value": row[4],
                "meta": json.loads(row[5]),
            }
        )
    for row in db.query(FACT_SQL + " WHERE f.author != 'extractor' ORDER BY f.id"):
        stamp = db.scalar("SELECT hlc FROM sync_row_clock WHERE uid = ?", (row[0],)) or 0
        records.append(
            {"t": "g", "agent": row[1], **dict(zip(FACT_KEYS, (row[0], *row[2:]), strict=True)), "hlc": stamp}
        )
    for (uid,) in db.query("SELECT uid FROM sync_row_clock WHERE deleted = 1"):
        records.append({"t": "px", "uid": uid})
    for digest, words, agent_uid in db.query("SELECT digest, words, agent_uid FROM sync_tombstones"):
        records.append({"t": "tomb", "digest": digest, "words": words, "agent": agent_uid})
    return {"schema": schema, "hlc": hlc, "covers": covers, "records": named(db, records)}


def _grouped(records: list[dict[str, Any]], kind: str, rows: list, keys: tuple[str, ...]) -> None:
    by_agent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_agent[row[1]].append(dict(zip(keys, (row[0], *row[2 : 1 + len(keys)]), strict=True)))
    records.extend({"t": kind, "agent": agent, "rows": items} for agent, items in by_agent.items())


def usable(covers: dict[str, int], first_logs: dict[str, int]) -> bool:
    """Whether a snapshot leaves no hole: every device's files after it are still in the folder."""
    return all(covers.get(device, 0) >= first - 1 for device, first in first_logs.items())
