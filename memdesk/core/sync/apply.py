"""Applying one change file of another device, by the merge rule of each kind of data.

- agents: one per name across devices (memory/synced.py); their name and prompt last-writer-wins;
- messages: append-only, never in conflict; a message already here is not added twice;
- archival passages and documents: inserts commute; an edit is last-writer-wins by hybrid clock; a
  delete wins over an edit or an insert that arrives after it;
- core memory blocks: versions with parents, merged three-way by line (``versions.py``); a merge
  whose sides changed the same lines, or that passes the block's limit, is kept (no line lost) and
  shown as a conflict for the user, and the model, to resolve;
- forgetting: a tombstone that wins over every edit (``tombstones.py``).

The caller runs it in one transaction with the file's number, so a file is applied once, whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memdesk.core.base.clock import iso
from memdesk.core.memory.synced import SyncedRows, tags_text
from memdesk.core.storage import Database
from memdesk.core.sync import conflicts, tombstones
from memdesk.core.sync.capture import add_version, block_versions, head_versions
from memdesk.core.sync.versions import Resolved, Version, resolve


@dataclass
class Applied:
    messages: int = 0
    passages: int = 0
    blocks: int = 0
    conflicts: int = 0
    forgets: int = 0
    facts: int = 0
    agents: set[int] = field(default_factory=set)


class Applier:
    """Applies the files of one transaction, in order. What it looks up once (an agent's id here,
    the forgotten terms) it keeps for the next records and files, until a record changes it (an
    agent made or re-keyed, a term forgotten)."""

    def __init__(self, db: Database, rows: SyncedRows, group_key: bytes, now: Callable[[], Any]) -> None:
        self._db = db
        self._rows = rows
        self._group_key = group_key
        self._now = now
        self._forgotten: tombstones.Tombstones | None = None
        self._agents: dict[str, int | None] = {}
        self._uids: dict[int, str] = {}

    def apply(self, payload: dict[str, Any], device_name: str) -> Applied:
        applied = Applied()
        note = f"from {device_name}" if device_name else "from another device"
        touched: dict[tuple[int, str], None] = {}
        for record in payload.get("records", []):
            kind = record.get("t")
            if kind == "a":
                self._agent(record, applied)
                # an agent's id may have changed to the one it shares with another device's
                self._rekeyed()
                continue
            if kind in ("pu", "px"):
                self._passage_change(record)
                continue
            agent_id = self._agent_of(record)
            if agent_id is None:
                continue
            agent_uid = self._uid(agent_id)
            if kind == "tomb":  # a snapshot's forgotten term: its digest only
                self._db.execute(
                    "INSERT OR IGNORE INTO sync_tombstones(digest, words, agent_uid) VALUES (?, ?, ?)",
                    (record["digest"], int(record["words"]), agent_uid),
                )
                self._forgotten = None
                continue
            applied.agents.add(agent_id)
            if kind == "m":
                applied.messages += self._rows.add_messages(agent_id, record["rows"])
                for row in record["rows"]:
                    self._again(agent_id, agent_uid, row["search_text"] or row["content"])
            elif kind == "h":
                applied.messages += self._rows.add_imported(agent_id, record["conversation"], record["rows"])
                for row in record["rows"]:
                    self._again(agent_id, agent_uid, row["search_text"] or row["content"])
            elif kind == "d":
                if not self._deleted(record["uid"]):
                    self._rows.add_document(agent_id, record)
            elif kind == "p":
                rows = [
                    dict(row, tags=tags_text(row["tags"])) for row in record["rows"] if not self._deleted(row["uid"])
                ]
                self._rows.add_passages(agent_id, rows)
                applied.passages += len(rows)
                for row in rows:
                    self._again(agent_id, agent_uid, row["text"])
            elif kind == "b":
                version = Version(record["edit"], tuple(record["parents"]), record["value"], record["meta"])
                add_version(self._db, agent_id, record["label"], version)
                touched[(agent_id, record["label"])] = None
            elif kind == "g":
                if self._newer(record["uid"], int(record["hlc"])) and self._rows.put_fact(agent_id, record):
                    applied.facts += 1
                self._again(agent_id, agent_uid, f"{record['subject']} {record['relation']} {record['object']}")
            elif kind == "f":
                tombstones.remember(self._db, self._group_key, agent_uid, record["text"])
                self._forgotten = None
                self._db.execute("INSERT INTO sync_forget_in(agent, text) VALUES (?, ?)", (agent_id, record["text"]))
                applied.forgets += 1
        for agent_id, label in touched:
            applied.blocks += 1
            applied.conflicts += self._block(agent_id, label, note)
        return applied

    # --- kinds -----------------------------------------------------------------------------
    def _agent(self, record: dict[str, Any], applied: Applied) -> None:
        agent_id = self._rows.add_agent(record["uid"], record["name"], record["created_at"], record["system_prompt"])
        applied.agents.add(agent_id)
        if self._newer(record["uid"], int(record.get("hlc", 0))):
            self._rows.update_agent(agent_id, record["name"], record["system_prompt"])

    def _passage_change(self, record: dict[str, Any]) -> None:
        uid = record["uid"]
        if record["t"] == "px":
            self._rows.delete_passage(uid)
            self._db.execute(
                "INSERT INTO sync_row_clock(uid, hlc, deleted) VALUES (?, 0, 1)"
                " ON CONFLICT(uid) DO UPDATE SET deleted = 1",
                (uid,),
            )
        elif not self._deleted(uid) and self._newer(uid, int(record["hlc"])):
            self._rows.edit_passage(uid, record["text"], tags_text(record["tags"]))

    def _block(self, agent_id: int, label: str, note: str) -> int:
        heads = head_versions(self._db, agent_id, label)
        if len(heads) == 1:  # a straight line of edits: nothing to merge
            only = heads[0]
            resolved = Resolved(only.value, only.meta, (only.edit_id,), False, ((only.edit_id, only.value),))
        else:
            resolved = resolve(block_versions(self._db, agent_id, label))
        self._rows.set_block(agent_id, label, resolved.value, resolved.meta, note=note, parents=list(resolved.sides))
        if resolved.value is not None:
            self._again(agent_id, self._uid(agent_id), resolved.value)
        if len(heads) == 1:  # an edit made after the merge (here or elsewhere) resolved it
            conflicts.close(self._db, agent_id, label, iso(self._now()))
        over = resolved.value is not None and len(resolved.value) > int(resolved.meta.get("limit", 2000))
        if not (resolved.conflict or over) or len(resolved.sides) < 2:
            return 0
        reason = conflicts.SAME_LINES if resolved.conflict else conflicts.OVER_LIMIT
        conflicts.record(self._db, self._rows, agent_id, label, resolved, reason)
        return 1

    # --- helpers ---------------------------------------------------------------------------
    def _agent_of(self, record: dict[str, Any]) -> int | None:
        """The agent a record names; one whose own record has not arrived yet (another device's
        file, still on its way) is found by name, or made, its prompt filled in when it arrives."""
        uid = str(record.get("agent", ""))
        if uid in self._agents:
            return self._agents[uid]
        agent_id = self._rows.agent_id(uid)
        if agent_id is None and record.get("agent_name"):
            agent_id = self._rows.add_agent(uid, str(record["agent_name"]), iso(self._now()), "")
            self._rekeyed()
        self._agents[uid] = agent_id
        return agent_id

    def _uid(self, agent_id: int) -> str:
        if agent_id not in self._uids:
            self._uids[agent_id] = self._db.scalar("SELECT uid FROM agents WHERE id = ?", (agent_id,))
        return self._uids[agent_id]

    def _rekeyed(self) -> None:
        """Agents were made or took another device's id: look them (and their terms) up again."""
        self._agents.clear()
        self._uids.clear()
        self._forgotten = None

    def _again(self, agent_id: int, agent_uid: str, text: str) -> None:
        if self._forgotten is None:
            self._forgotten = tombstones.Tombstones(self._db, self._group_key)
        for term in self._forgotten.found_in(agent_uid, text):
            self._db.execute("INSERT INTO sync_forget_in(agent, text) VALUES (?, ?)", (agent_id, term))

    def _deleted(self, uid: str) -> bool:
        return bool(self._db.scalar("SELECT deleted FROM sync_row_clock WHERE uid = ?", (uid,)))

    def _newer(self, uid: str, hlc: int) -> bool:
        """Whether a change stamped ``hlc`` is the newest this row has seen (and remember it)."""
        current = self._db.scalar("SELECT hlc FROM sync_row_clock WHERE uid = ?", (uid,))
        if current is not None and current >= hlc:
            return False
        self._db.execute(
            "INSERT INTO sync_row_clock(uid, hlc) VALUES (?, ?) ON CONFLICT(uid) DO UPDATE SET hlc = excluded.hlc",
            (uid, hlc),
        )
        return True


def payload_bytes(payload: dict[str, Any]) -> int:
    return len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())
