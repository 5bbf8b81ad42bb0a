"""This device's changes, from the outbox the triggers fill to the payload of its next change file.

Taken in one transaction with the file's number: the payload is kept in ``sync_pending_file``
until the file is on disk, so a kill at any point either leaves the outbox as it was or leaves a
payload that the next sync writes under the same number. Each row goes once per file, as it reads
now (ten edits of a passage between two syncs send one), stamped with the hybrid clock.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from memdesk.core.base.clock import iso
from memdesk.core.storage import Database
from memdesk.core.sync import conflicts
from memdesk.core.sync.hlc import HybridClock, wall_ms
from memdesk.core.sync.versions import Version, resolve, version_from_row

_MESSAGE_SQL = (
    "SELECT m.uid, a.uid, m.created_at, m.role, m.kind, m.author, m.content, m.search_text, m.function_name,"
    " (SELECT s.uid FROM messages s WHERE s.id = m.step_id)"
    " FROM sync_outbox o JOIN messages m ON m.uid = o.key JOIN agents a ON a.id = m.agent_id"
    " WHERE o.kind = 'messages' AND o.seq <= ? GROUP BY m.id ORDER BY m.id"
)
_PASSAGE_SQL = (
    "SELECT p.uid, a.uid, p.text, p.created_at, p.tags, d.uid, p.chunk_index, p.page, p.section, p.char_start,"
    " p.char_end, MAX(o.op = 'i')"
    " FROM sync_outbox o JOIN passages p ON p.uid = o.key JOIN agents a ON a.id = p.agent_id"
    " LEFT JOIN documents d ON d.id = p.document_id"
    " WHERE o.kind = 'passages' AND o.op != 'd' AND o.seq <= ? GROUP BY p.id ORDER BY p.id"
)
_DOCUMENT_SQL = (
    "SELECT d.uid, a.uid, d.path, d.title, d.content_hash, d.size_bytes, d.mime, d.chunk_count, d.created_at,"
    " d.updated_at FROM sync_outbox o JOIN documents d ON d.uid = o.key JOIN agents a ON a.id = d.agent_id"
    " WHERE o.kind = 'documents' AND o.seq <= ? GROUP BY d.id ORDER BY d.id"
)
#: A fact the agent or the user wrote, its entities by the names people see (their roots): another
#: device resolves them by name (its own ids differ). The extractor's facts are derived everywhere.
FACT_SQL = (
    "SELECT f.uid, a.uid, s.name, f.relation, o.name, f.valid_from, f.valid_to, f.author, f.deleted"
    " FROM graph_facts f JOIN agents a ON a.id = f.agent_id"
    " JOIN graph_entities s ON s.id = COALESCE((SELECT merged_into FROM graph_entities WHERE id = f.subject_id),"
    " f.subject_id)"
    " JOIN graph_entities o ON o.id = COALESCE((SELECT merged_into FROM graph_entities WHERE id = f.object_id),"
    " f.object_id)"
)
FACT_KEYS = ("uid", "subject", "relation", "object", "valid_from", "valid_to", "author", "deleted")
_FACT_SQL = (
    FACT_SQL + " WHERE f.uid IN (SELECT key FROM sync_outbox WHERE kind = 'graph_facts' AND seq <= ?)"
    " AND f.author != 'extractor' ORDER BY f.id"
)
#: A message of a conversation imported from another assistant, with its conversation's natural key
#: (source, export id) and fields: another device puts it in the same conversation, never its chat.
IMPORTED_SQL = (
    "SELECT m.uid, a.uid, m.created_at, m.role, m.kind, m.author, m.content, m.search_text, m.function_name,"
    " m.external_id, m.imported_at, c.source, c.external_id, c.title, c.assistant, c.started_at, c.updated_at,"
    " c.created_at FROM messages m JOIN agents a ON a.id = m.agent_id"
    " JOIN imported_conversations c ON c.id = m.conversation_id"
)
IMPORTED_KEYS = (
    "uid",
    "created_at",
    "role",
    "kind",
    "author",
    "content",
    "search_text",
    "function_name",
    "external_id",
)
CONVERSATION_KEYS = ("source", "external_id", "title", "assistant", "started_at", "updated_at", "created_at")
_IMPORTED_SQL = (
    IMPORTED_SQL + " WHERE m.uid IN (SELECT key FROM sync_outbox WHERE kind = 'imported' AND seq <= ?) ORDER BY m.id"
)


def imported_records(rows: list) -> list[dict[str, Any]]:
    """``IMPORTED_SQL``'s rows as one record per conversation."""
    grouped: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        conversation = dict(zip(CONVERSATION_KEYS, row[11:18], strict=True))
        record = grouped.setdefault(
            (row[1], conversation["source"], conversation["external_id"]),
            {"t": "h", "agent": row[1], "conversation": conversation, "rows": []},
        )
        message = dict(zip(IMPORTED_KEYS, (row[0], *row[2:10]), strict=True))
        record["rows"].append(message | {"imported_at": row[10]})
    return list(grouped.values())


#: A message as a change file carries it (``step`` is the stable id of its assistant call).
MESSAGE_KEYS = ("uid", "created_at", "role", "kind", "author", "content", "search_text", "function_name", "step")
PASSAGE_KEYS = (
    "uid",
    "text",
    "created_at",
    "tags",
    "document",
    "chunk_index",
    "page",
    "section",
    "char_start",
    "char_end",
)
DOCUMENT_KEYS = (
    "uid",
    "path",
    "title",
    "content_hash",
    "size_bytes",
    "mime",
    "chunk_count",
    "created_at",
    "updated_at",
)


def block_versions(db: Database, agent_id: int, label: str) -> dict[str, Version]:
    rows = db.query(
        "SELECT edit_id, parents, value, meta FROM sync_block_versions WHERE agent_id = ? AND label = ?",
        (agent_id, label),
    )
    return {row[0]: version_from_row(row) for row in rows}


def head_versions(db: Database, agent_id: int, label: str) -> list[Version]:
    rows = db.query(
        "SELECT edit_id, parents, value, meta FROM sync_block_versions WHERE agent_id = ? AND label = ? AND head = 1"
        " ORDER BY edit_id",
        (agent_id, label),
    )
    return [version_from_row(row) for row in rows]


def add_version(db: Database, agent_id: int, label: str, version: Version) -> bool:
    """Keep a version (once); returns whether it was new."""
    # A child that arrived first (files from two devices, out of order) names it. A child's clock is
    # past its parents' (hybrid clock), so only versions with a later id need looking at.
    named = db.scalar(
        "SELECT 1 FROM sync_block_versions WHERE agent_id = ? AND label = ? AND edit_id > ? AND parents LIKE ? LIMIT 1",
        (agent_id, label, version.edit_id, f'%"{version.edit_id}"%'),
    )
    added = db.execute(
        "INSERT OR IGNORE INTO sync_block_versions(edit_id, agent_id, label, parents, value, meta, head)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            version.edit_id,
            agent_id,
            label,
            json.dumps(list(version.parents)),
            version.value,
            json.dumps(version.meta, sort_keys=True),
            0 if named else 1,
        ),
    ).rowcount
    if added and version.parents:
        marks = ",".join("?" * len(version.parents))
        db.execute(f"UPDATE sync_block_versions SET head = 0 WHERE edit_id IN ({marks})", list(version.parents))
    return bool(added)


def current_version(db: Database, agent_id: int, label: str) -> tuple[str | None, dict, tuple[str, ...], bool]:
    """The block's text and settings as its versions say, its heads, and whether they merged with a
    conflict. One head (the usual case) is read directly; several are merged (versions.py)."""
    heads = head_versions(db, agent_id, label)
    if len(heads) == 1:
        return heads[0].value, heads[0].meta, (heads[0].edit_id,), False
    if not heads:
        return None, {}, (), False
    resolved = resolve(block_versions(db, agent_id, label))
    return resolved.value, resolved.meta, resolved.heads, resolved.conflict


def take_changes(db: Database, clock: HybridClock, device_id: str, schema: int) -> dict[str, Any] | None:
    """The records of every change captured so far, and their removal from the outbox (call inside
    the transaction that stores the payload). None when nothing changed."""
    last = db.scalar("SELECT MAX(seq) FROM sync_outbox")
    forgets = db.query(
        "SELECT f.seq, a.uid, f.text FROM sync_forget_out f JOIN agents a ON a.id = f.agent ORDER BY f.seq"
    )
    if last is None and not forgets:
        return None
    last = last or 0
    records: list[dict[str, Any]] = []
    for uid, name, created_at, prompt in db.query(
        "SELECT a.uid, a.name, a.created_at, a.system_prompt FROM sync_outbox o JOIN agents a ON a.uid = o.key"
        " WHERE o.kind = 'agents' AND o.seq <= ? GROUP BY a.id ORDER BY a.id",
        (last,),
    ):
        records.append(
            {
                "t": "a",
                "uid": uid,
                "name": name,
                "created_at": created_at,
                "system_prompt": prompt,
                "hlc": stamped(db, uid, clock.tick()),
            }
        )
    for row in db.query(_DOCUMENT_SQL, (last,)):
        records.append({"t": "d", "agent": row[1], **dict(zip(DOCUMENT_KEYS, (row[0], *row[2:]), strict=True))})
    by_agent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in db.query(_MESSAGE_SQL, (last,)):
        by_agent[row[1]].append(dict(zip(MESSAGE_KEYS, (row[0], *row[2:]), strict=True)))
    for agent_uid, rows in by_agent.items():
        records.append({"t": "m", "agent": agent_uid, "rows": rows, "hlc": clock.tick()})
    records.extend(imported_records(db.query(_IMPORTED_SQL, (last,))))
    inserted: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in db.query(_PASSAGE_SQL, (last,)):
        passage = dict(zip(PASSAGE_KEYS, (row[0], *row[2:11]), strict=True))
        if row[11]:
            inserted[row[1]].append(passage)
        else:
            records.append(
                {
                    "t": "pu",
                    "uid": passage["uid"],
                    "text": passage["text"],
                    "tags": passage["tags"],
                    "hlc": stamped(db, passage["uid"], clock.tick()),
                }
            )
    for agent_uid, rows in inserted.items():
        records.append({"t": "p", "agent": agent_uid, "rows": rows})
    for (uid,) in db.query(
        "SELECT DISTINCT key FROM sync_outbox WHERE kind = 'passages' AND op = 'd' AND seq <= ?", (last,)
    ):
        records.append({"t": "px", "uid": uid})
    for row in db.query(_FACT_SQL, (last,)):
        fact = dict(zip(FACT_KEYS, (row[0], *row[2:]), strict=True))
        records.append({"t": "g", "agent": row[1], **fact, "hlc": stamped(db, fact["uid"], clock.tick())})
    records.extend(_block_records(db, clock, device_id, last))
    records.extend({"t": "f", "agent": agent_uid, "text": text} for _, agent_uid, text in forgets)
    db.execute("DELETE FROM sync_outbox WHERE seq <= ?", (last,))
    db.execute("DELETE FROM sync_forget_out")
    if not records:
        return None
    return {"schema": schema, "hlc": clock.last, "records": named(db, records)}


def named(db: Database, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each record names its agent's name beside its id: a device that has not yet applied the
    file announcing that id (another device's, arriving later) finds the agent by name."""
    names = dict(db.query("SELECT uid, name FROM agents"))
    for record in records:
        if "agent" in record:
            record["agent_name"] = names.get(record["agent"], "")
    return records


def _block_records(db: Database, clock: HybridClock, device_id: str, last: int) -> list[dict[str, Any]]:
    records = []
    for (key,) in db.query(
        "SELECT key FROM sync_outbox WHERE kind = 'memory_blocks' AND seq <= ? GROUP BY key ORDER BY MIN(seq)",
        (last,),
    ):
        agent_uid, label = key.split("/", 1)
        agent_id = db.scalar(
            "SELECT id FROM agents WHERE uid = COALESCE((SELECT target FROM sync_aliases WHERE uid = ?), ?)",
            (agent_uid, agent_uid),
        )
        if agent_id is None:
            continue
        agent_uid = db.scalar("SELECT uid FROM agents WHERE id = ?", (agent_id,))
        row = db.query_one(
            "SELECT value, char_limit, description, read_only FROM memory_blocks WHERE agent_id = ? AND label = ?",
            (agent_id, label),
        )
        value, meta = (None, {}) if row is None else (row[0], block_meta(row[1], row[2], row[3]))
        known_value, known_meta, heads, _ = current_version(db, agent_id, label)
        if heads and known_value == value and (value is None or known_meta == meta):
            continue
        version = Version(f"{clock.tick():016x}-{device_id}", heads, value, meta)
        add_version(db, agent_id, label, version)
        if len(heads) > 1:  # an edit of the merged text: the merge's conflicts are resolved
            conflicts.close(db, agent_id, label, iso(datetime.fromtimestamp(wall_ms(clock.last) / 1000, UTC)))
        records.append(
            {
                "t": "b",
                "agent": agent_uid,
                "label": label,
                "edit": version.edit_id,
                "parents": list(version.parents),
                "value": value,
                "meta": meta,
            }
        )
    return records


def stamped(db: Database, uid: str, hlc: int) -> int:
    """Remember the clock of this device's own edit of a row: an older edit from elsewhere loses."""
    db.execute(
        "INSERT INTO sync_row_clock(uid, hlc) VALUES (?, ?) ON CONFLICT(uid) DO UPDATE SET hlc = excluded.hlc",
        (uid, hlc),
    )
    return hlc


def block_meta(limit: int, description: str, read_only: int) -> dict[str, Any]:
    return {"limit": int(limit), "description": description, "read_only": bool(read_only)}
