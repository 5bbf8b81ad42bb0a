"""Rows another device wrote, arriving through sync (memdesk.core.sync): memory stays their only
writer. Each comes with its stable id; an agent's, message's or passage's integer id here is this
store's own. The triggers of the tables rebuild what is derived on this device: full-text indexes
now, vectors at the next embedding pass (``embedded = 0``), the graph at the next extraction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.base.errors import MemDeskError
from memdesk.core.embedding import Embedder
from memdesk.core.graph import KnowledgeGraph
from memdesk.core.memory.history import BLOCK, CREATE, DELETE, SYNC, UPDATE, MemoryHistory
from memdesk.core.memory.space import EmbeddingSpace, has_vector_table
from memdesk.core.retrieval import vector_codes
from memdesk.core.retrieval.vector_index import TABLES as VECTOR_TABLES
from memdesk.core.storage import Database


class SyncedRows:
    def __init__(self, db: Database, clock: Clock, history: MemoryHistory, graph: KnowledgeGraph | None = None) -> None:
        """``graph``: the knowledge graph on ``db``, for the facts the agent or the user wrote."""
        self._db = db
        self._clock = clock
        self._history = history
        self._graph = graph

    # --- agents ----------------------------------------------------------------------------
    def agent_id(self, uid: str) -> int | None:
        target = self._db.scalar("SELECT target FROM sync_aliases WHERE uid = ?", (uid,)) or uid
        return self._db.scalar("SELECT id FROM agents WHERE uid = ?", (target,))

    def add_agent(self, uid: str, name: str, created_at: str, system_prompt: str) -> int:
        """The agent, or the one of the same name here: both devices' agent named Sam is one Sam,
        known everywhere by the smaller of the two ids."""
        existing = self.agent_id(uid)
        if existing is not None:
            return existing
        row = self._db.query_one("SELECT id, uid FROM agents WHERE name = ?", (name,))
        if row is not None:
            keep, other = sorted((uid, row[1]))
            self._db.execute("INSERT OR REPLACE INTO sync_aliases(uid, target) VALUES (?, ?)", (other, keep))
            self._db.execute("UPDATE sync_aliases SET target = ? WHERE target = ?", (keep, other))
            self._db.execute("UPDATE agents SET uid = ? WHERE id = ?", (keep, row[0]))
            # sync's forgotten terms are kept per agent id: they follow it
            self._db.execute("UPDATE sync_tombstones SET agent_uid = ? WHERE agent_uid = ?", (keep, other))
            return int(row[0])
        cursor = self._db.execute(
            "INSERT INTO agents(uid, name, created_at, system_prompt) VALUES (?, ?, ?, ?)",
            (uid, name, created_at, system_prompt),
        )
        return int(cursor.lastrowid)

    def update_agent(self, agent_id: int, name: str, system_prompt: str) -> None:
        if self._db.scalar("SELECT 1 FROM agents WHERE name = ? AND id != ?", (name, agent_id)):
            return  # a name taken here stays; the devices' agents already share one identity
        self._db.execute("UPDATE agents SET name = ?, system_prompt = ? WHERE id = ?", (name, system_prompt, agent_id))

    # --- messages and passages: inserts commute --------------------------------------------
    def add_messages(self, agent_id: int, messages: Sequence[dict[str, Any]]) -> int:
        """Append-only: a message already here (the same stable id) is not added twice."""
        added = _insert_messages(self._db, agent_id, messages)
        steps = [(m["step"], m["uid"]) for m in messages if m.get("step")]
        if steps:
            self._db.executemany(
                "UPDATE messages SET step_id = (SELECT id FROM messages WHERE uid = ?) WHERE uid = ?", steps
            )
        return added

    def add_imported(self, agent_id: int, conversation: dict[str, Any], messages: Sequence[dict[str, Any]]) -> int:
        """Messages of a conversation imported on another device: into the same conversation here
        (found by its source and export id, made if new), never into the agent's own chat, with
        the time they were imported (retention counts from it). A message already here, by its
        stable id or by its export id (the export was imported here too), is not added twice."""
        self._db.execute(
            "INSERT OR IGNORE INTO imported_conversations(agent_id, source, external_id, title, assistant, started_at,"
            " updated_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                agent_id,
                *(conversation[k] for k in ("source", "external_id", "title", "assistant")),
                conversation["started_at"],
                conversation["updated_at"],
                conversation["created_at"],
            ),
        )
        conversation_id = self._db.scalar(
            "SELECT id FROM imported_conversations WHERE agent_id = ? AND source = ? AND external_id = ?",
            (agent_id, conversation["source"], conversation["external_id"]),
        )
        there = dict(
            self._db.query("SELECT external_id, uid FROM messages WHERE conversation_id = ?", (conversation_id,))
        )
        # Imported on both devices, a message has an id from each: the smaller stands for it everywhere.
        self._db.executemany(
            "UPDATE messages SET uid = ? WHERE uid = ?",
            [(m["uid"], there[m["external_id"]]) for m in messages if m["uid"] < there.get(m["external_id"], "")],
        )
        added = _insert_messages(
            self._db,
            agent_id,
            [{**m, "conversation_id": conversation_id} for m in messages if m["external_id"] not in there],
            imported=True,
        )
        self._db.execute(
            "UPDATE imported_conversations SET title = ?, updated_at = COALESCE(MAX(updated_at, ?), updated_at, ?),"
            " message_count = (SELECT COUNT(*) FROM messages WHERE conversation_id = ?) WHERE id = ?",
            (
                conversation["title"],
                conversation["updated_at"],
                conversation["updated_at"],
                conversation_id,
                conversation_id,
            ),
        )
        return added

    def add_document(self, agent_id: int, document: dict[str, Any]) -> None:
        """A document read on another device: its path names that machine's file, so it is marked
        imported (never read from here until the user picks the file, as an agent file's are)."""
        self._db.execute(
            "INSERT INTO documents(uid, agent_id, path, title, content_hash, size_bytes, mime, status, chunk_count,"
            " created_at, updated_at, path_imported) VALUES (?, ?, ?, ?, ?, ?, ?, 'done', ?, ?, ?, 1)"
            " ON CONFLICT(uid) DO UPDATE SET title = excluded.title, chunk_count = excluded.chunk_count",
            (
                document["uid"],
                agent_id,
                _unique_path(self._db, agent_id, document),
                document["title"],
                document["content_hash"],
                document["size_bytes"],
                document["mime"],
                document["chunk_count"],
                document["created_at"],
                document["updated_at"],
            ),
        )

    def add_passages(self, agent_id: int, passages: Sequence[dict[str, Any]]) -> None:
        rows = [
            (
                p["uid"],
                agent_id,
                p["text"],
                p["created_at"],
                p["tags"],
                self._db.scalar("SELECT id FROM documents WHERE uid = ?", (p["document"],)) if p["document"] else None,
                p["chunk_index"],
                p["page"],
                p["section"],
                p["char_start"],
                p["char_end"],
            )
            for p in passages
        ]
        self._db.executemany(
            "INSERT OR IGNORE INTO passages(uid, agent_id, text, created_at, tags, document_id, chunk_index, page,"
            " section, char_start, char_end) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )

    def edit_passage(self, uid: str, text: str, tags: str) -> None:
        self._db.execute(
            "UPDATE passages SET text = ?, tags = ?, embedded = 0 WHERE uid = ? AND (text != ? OR tags != ?)",
            (text, tags, uid, text, tags),
        )

    def delete_passage(self, uid: str) -> None:
        row = self._db.query_one("SELECT id FROM passages WHERE uid = ?", (uid,))
        if row is None:
            return
        # vec0 rows have no foreign key to cascade from (space.py)
        if has_vector_table(self._db, "passages"):
            self._db.execute(f"DELETE FROM {VECTOR_TABLES['passages']} WHERE rowid = ?", (row[0],))
            vector_codes.remove(self._db, "passages", [row[0]])
        self._db.execute("DELETE FROM passages WHERE id = ?", (row[0],))

    def embed_pending(self, agent_id: int, embedder: Embedder, *, batch: int = 256) -> int:
        """Vectors for the passages that arrived without one, from this device's own embedder (so
        two models' vectors never mix: a device with another embedder has its own). Returns how many."""
        space, done = EmbeddingSpace(self._db, embedder), 0
        while True:
            rows = self._db.query(
                "SELECT id, text FROM passages WHERE agent_id = ? AND embedded = 0 ORDER BY id LIMIT ?",
                (agent_id, batch),
            )
            if not rows:
                return done
            space.write("passages", agent_id, [r[0] for r in rows], embedder.embed([r[1] for r in rows]))
            done += len(rows)

    # --- the knowledge graph: facts the agent or the user wrote --------------------------------
    def put_fact(self, agent_id: int, fact: dict[str, Any]) -> bool:
        """A fact another device's agent or user wrote (the newest change of it, by clock), its
        entities resolved here by name. A new one is added as the graph adds any: an older fact of
        a single-valued relation is closed (its validity window ends), never deleted. An identical
        fact here (the extractor's, from the same synced message) becomes this one. Returns
        whether the graph changed; a fact this graph cannot hold (a name it refuses) is skipped."""
        if self._graph is None:
            return False
        row = self._db.query_one("SELECT id FROM graph_facts WHERE uid = ?", (fact["uid"],))
        if row is not None:
            fact_id = int(row[0])
        elif fact["deleted"]:
            return False  # deleted before it got here
        else:
            try:
                made, _edit = self._graph.insert_fact(
                    agent_id,
                    fact["subject"],
                    fact["relation"],
                    fact["object"],
                    author=fact["author"],
                    valid_from=parse_iso(fact["valid_from"]),
                )
            except MemDeskError:
                return False
            fact_id = made.id
            kept = self._db.query_one("SELECT uid, author FROM graph_facts WHERE id = ?", (fact_id,))
            if kept[1] != "extractor" and kept[0] < fact["uid"]:
                # both devices wrote it: the smaller id stands for it everywhere (its record arrives too)
                return False
        self._db.execute(
            "UPDATE graph_facts SET uid = ?, relation = ?, valid_from = ?, valid_to = ?, deleted = ?, author = ?"
            " WHERE id = ?",
            (
                fact["uid"],
                fact["relation"],
                fact["valid_from"],
                fact["valid_to"],
                int(bool(fact["deleted"])),
                fact["author"],
                fact_id,
            ),
        )
        return True

    # --- core memory blocks ----------------------------------------------------------------
    def set_block(self, agent_id: int, label: str, value: str | None, meta: dict, *, note: str, parents: list) -> None:
        """The block as the merge of every device's versions says; recorded in the memory history
        with the versions it came from (both parents, when two devices' edits were merged)."""
        row = self._db.query_one(
            "SELECT id, value, char_limit, description, read_only FROM memory_blocks WHERE agent_id = ? AND label = ?",
            (agent_id, label),
        )
        parents_meta = {"parents": [{"version": edit_id, "text": text} for edit_id, text in parents]}
        now = iso(self._clock.now())
        if value is None:
            if row is not None:
                self._db.execute("DELETE FROM memory_blocks WHERE id = ?", (row[0],))
                self._history.record(
                    agent_id,
                    BLOCK,
                    row[0],
                    DELETE,
                    source=SYNC,
                    before=row[1],
                    label=label,
                    after_meta=parents_meta,
                    note=note,
                )
            return
        limit = max(int(meta.get("limit", 2000)), len(value))
        description, read_only = str(meta.get("description", "")), int(bool(meta.get("read_only", False)))
        if row is None:
            position = self._db.scalar(
                "SELECT COALESCE(MAX(position), -1) + 1 FROM memory_blocks WHERE agent_id = ?", (agent_id,)
            )
            cursor = self._db.execute(
                "INSERT INTO memory_blocks(agent_id, label, value, char_limit, description, read_only, position,"
                " updated_at, updated_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (agent_id, label, value, limit, description, read_only, position, now, SYNC),
            )
            self._history.record(
                agent_id,
                BLOCK,
                int(cursor.lastrowid),
                CREATE,
                source=SYNC,
                after=value,
                label=label,
                after_meta=parents_meta,
                note=note,
            )
            return
        if (row[1], row[2], row[3], row[4]) == (value, limit, description, read_only):
            return
        self._db.execute(
            "UPDATE memory_blocks SET value = ?, char_limit = ?, description = ?, read_only = ?, updated_at = ?,"
            " updated_by = ?, version = version + 1 WHERE id = ?",
            (value, limit, description, read_only, now, SYNC, row[0]),
        )
        if row[1] != value:
            self._history.record(
                agent_id,
                BLOCK,
                row[0],
                UPDATE,
                source=SYNC,
                before=row[1],
                after=value,
                label=label,
                after_meta=parents_meta,
                note=note,
            )


#: A message's columns as the device that wrote it sent them (``agent_id`` is this store's own).
_MESSAGE_COLUMNS = ("uid", "created_at", "role", "kind", "author", "content", "search_text", "function_name")
#: What an imported message adds: its conversation here, its id in the export, when it was imported.
_IMPORTED_COLUMNS = ("conversation_id", "external_id", "imported_at")


def _insert_messages(db: Database, agent_id: int, messages: Sequence[dict[str, Any]], *, imported: bool = False) -> int:
    """Insert the messages not already here (by stable id); how many were added."""
    fields = _MESSAGE_COLUMNS + (_IMPORTED_COLUMNS if imported else ())
    columns = ", ".join(("agent_id", *fields))
    marks = ", ".join("?" * (len(fields) + 1))
    rows = [(agent_id, *(m[f] for f in fields)) for m in messages]
    added = db.executemany(f"INSERT OR IGNORE INTO messages({columns}) VALUES ({marks})", rows).rowcount
    return max(int(added), 0)


def _unique_path(db: Database, agent_id: int, document: dict[str, Any]) -> str:
    path = str(document["path"])
    if db.scalar(
        "SELECT 1 FROM documents WHERE agent_id = ? AND path = ? AND uid != ?", (agent_id, path, document["uid"])
    ):
        return f"{path}#{document['uid'][:8]}"
    return path


def tags_text(tags: Any) -> str:
    return tags if isinstance(tags, str) else json.dumps(tags)
