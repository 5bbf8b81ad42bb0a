"""The history of what an agent remembers: every change to a memory block, an archival passage or
(through the same API) a knowledge-graph fact, with its text before and after, who made it
(``source``), when, and what caused it (the message the agent was answering and the call it made,
a document, an imported file).

Owners record here inside their own write methods and transactions (core_memory.py,
archival.py, the graph store), so no writer can change memory without leaving a trace. The table
keeps at most ``max_changes()`` changes per agent; the oldest go first.

A change made while the agent runs a tool does not know its assistant-call message yet (the loop
saves the call after running it); the tool's ``Cause`` collects the changes it recorded, and the
loop calls ``Cause.settle(call_id)`` once the call is saved, in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.storage import Database

#: Who changed memory. APP: MemDesk itself (a new agent's default persona, its empty human block),
#: so the history does not say the user wrote text they never saw. SYNC: another device (its name
#: in the note), or the merge of its edit with this device's.
AGENT, USER, IMPORT, CONSOLIDATION, EXTRACTOR, APP = "agent", "user", "import", "consolidation", "extractor", "app"
SYNC = "sync"
SOURCES = (AGENT, USER, IMPORT, CONSOLIDATION, EXTRACTOR, APP, SYNC)
#: What was changed. Other kinds may be recorded (the column is free text); these are known.
BLOCK, PASSAGE, GRAPH_FACT, GRAPH_ENTITY = "block", "passage", "graph_fact", "graph_entity"
#: A document's chunks, added or removed together (one change per document, not per chunk).
DOCUMENT = "document"
#: Something forgotten at the user's request (memdesk.core.memory.forget): counts only, never the text.
FORGET = "forget"
KINDS = (BLOCK, PASSAGE, GRAPH_FACT, GRAPH_ENTITY, DOCUMENT)
#: How it changed.
CREATE, UPDATE, DELETE, CONFIGURE = "create", "update", "delete", "configure"
ACTIONS = (CREATE, UPDATE, DELETE, CONFIGURE)


@dataclass
class Cause:
    """Why a change happened: pass one to an owner's write method.

    ``message_id``: the message the agent was answering (a user message, heartbeat, alert);
    ``step_id``: the assistant call that made the change; ``document_id``: the document it came
    from; ``reverts``: the change an undo reverses; ``note``: a few words for people (the tool,
    the file name)."""

    message_id: int | None = None
    step_id: int | None = None
    document_id: int | None = None
    reverts: int | None = None
    note: str = ""
    #: The changes recorded under this cause so far (filled in by MemoryHistory.record).
    recorded: list[int] = field(default_factory=list, repr=False)
    _history: MemoryHistory | None = field(default=None, repr=False)

    def settle(self, step_id: int) -> None:
        """Attach the assistant call, saved after the tool ran, to the changes the tool made."""
        self.step_id = step_id
        if self.recorded and self._history is not None:
            self._history.link_step(self.recorded, step_id)


@dataclass(frozen=True)
class Change:
    id: int
    agent_id: int
    kind: str
    target_id: int | None
    label: str
    action: str
    before: str | None
    after: str | None
    before_meta: dict[str, Any] | None
    after_meta: dict[str, Any] | None
    source: str
    at: datetime
    message_id: int | None
    step_id: int | None
    document_id: int | None
    reverts: int | None
    note: str

    @property
    def is_revert(self) -> bool:
        return self.reverts is not None

    def describe(self) -> str:
        """One line for lists: "agent updated human", "user reverted persona"."""
        if self.kind == FORGET:
            return f"{self.source}: {self.after}" if self.after else f"{self.source} forgot something"
        verb = {CREATE: "created", UPDATE: "updated", DELETE: "deleted", CONFIGURE: "changed the settings of"}.get(
            self.action, self.action
        )
        if self.is_revert:
            verb = "reverted"
        what = self.label or f"{self.kind} {self.target_id}"
        kind = "" if self.kind == BLOCK else f"{self.kind.replace('_', ' ')} "
        author = "MemDesk" if self.source == APP else self.source
        return f"{author} {verb} {kind}{what}"


_COLUMNS = (
    "id, agent_id, target_kind, target_id, target_label, action, before, after, before_meta, after_meta, source,"
    " created_at,"
    " message_id, step_id, document_id, reverts, note"
)


def _loads(text: str | None) -> dict[str, Any] | None:
    return None if text is None else json.loads(text)


def _change(row) -> Change:
    return Change(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        row[7],
        _loads(row[8]),
        _loads(row[9]),
        row[10],
        parse_iso(row[11]),
        row[12],
        row[13],
        row[14],
        row[15],
        row[16],
    )


class MemoryHistory:
    def __init__(self, db: Database, clock: Clock, max_changes: Callable[[], int] | None = None) -> None:
        """``max_changes`` is read at each write (the history_max_changes setting, which the user
        may change while running); 0 or less, or none given, keeps everything."""
        self._db = db
        self._clock = clock
        self._max_changes = max_changes or (lambda: 0)

    def on(self, db: Database) -> MemoryHistory:
        """This history, bounded the same way, on another store (a snapshot being rewritten)."""
        return MemoryHistory(db, self._clock, self._max_changes)

    # --- recording -------------------------------------------------------------------------
    def record(
        self,
        agent_id: int,
        kind: str,
        target_id: int | None,
        action: str,
        *,
        source: str,
        before: str | None = None,
        after: str | None = None,
        label: str = "",
        before_meta: dict[str, Any] | None = None,
        after_meta: dict[str, Any] | None = None,
        cause: Cause | None = None,
        message_id: int | None = None,
        note: str = "",
        prune: bool = True,
    ) -> int:
        """Record one change; call it inside the transaction that makes the change. Writers that
        only know the message a change came from may pass ``message_id`` and ``note`` instead of
        a ``cause``."""
        if source not in SOURCES:
            raise ValueError(f"Unknown memory change source {source!r}; expected one of {SOURCES}")
        if action not in ACTIONS:
            raise ValueError(f"Unknown memory change action {action!r}; expected one of {ACTIONS}")
        cause = cause or Cause(message_id=message_id, note=note)
        cursor = self._db.execute(
            f"INSERT INTO memory_history({_COLUMNS.split(', ', 1)[1]})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                agent_id,
                kind,
                target_id,
                label,
                action,
                before,
                after,
                None if before_meta is None else json.dumps(before_meta, ensure_ascii=False),
                None if after_meta is None else json.dumps(after_meta, ensure_ascii=False),
                source,
                iso(self._clock.now()),
                cause.message_id,
                cause.step_id,
                cause.document_id,
                cause.reverts,
                cause.note,
            ),
        )
        change_id = int(cursor.lastrowid)
        cause.recorded.append(change_id)
        cause._history = self
        if prune:
            self.prune(agent_id, kind)
        return change_id

    def link_step(self, change_ids: list[int], step_id: int) -> None:
        marks = ",".join("?" * len(change_ids))
        self._db.execute(f"UPDATE memory_history SET step_id = ? WHERE id IN ({marks})", (step_id, *change_ids))

    def prune(self, agent_id: int, kind: str | None = None) -> int:
        """Drop an agent's oldest changes beyond the limit, counted per kind (a busy extractor does
        not push the blocks' history out); returns how many went."""
        limit = int(self._max_changes())
        if limit <= 0:
            return 0
        kinds = (
            [kind]
            if kind
            else [
                r[0]
                for r in self._db.query(
                    "SELECT DISTINCT target_kind FROM memory_history WHERE agent_id = ?", (agent_id,)
                )
            ]
        )
        dropped = 0
        for target_kind in kinds:
            cutoff = self._db.scalar(
                "SELECT id FROM memory_history WHERE agent_id = ? AND target_kind = ? ORDER BY id DESC"
                " LIMIT 1 OFFSET ?",
                (agent_id, target_kind, limit),
            )
            if cutoff is not None:
                dropped += self._db.execute(
                    "DELETE FROM memory_history WHERE agent_id = ? AND target_kind = ? AND id <= ?",
                    (agent_id, target_kind, cutoff),
                ).rowcount
        return dropped

    # --- reading ---------------------------------------------------------------------------
    def get(self, change_id: int) -> Change | None:
        row = self._db.query_one(f"SELECT {_COLUMNS} FROM memory_history WHERE id = ?", (change_id,))
        return _change(row) if row else None

    def for_agent(
        self, agent_id: int, *, kind: str | None = None, limit: int = 200, before_id: int | None = None
    ) -> list[Change]:
        """Newest first; page with ``before_id`` (the last id of the previous page)."""
        where = ["agent_id = ?"]
        params: list[Any] = [agent_id]
        if kind is not None:
            where.append("target_kind = ?")
            params.append(kind)
        if before_id is not None:
            where.append("id < ?")
            params.append(before_id)
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM memory_history WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?",
            (*params, limit),
        )
        return [_change(r) for r in rows]

    def for_block(self, agent_id: int, label: str, *, limit: int = 200) -> list[Change]:
        """A block's changes, newest first, by label: a block removed and added again keeps one history."""
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM memory_history WHERE agent_id = ? AND target_kind = ? AND target_label = ?"
            " ORDER BY id DESC LIMIT ?",
            (agent_id, BLOCK, label, limit),
        )
        return [_change(r) for r in rows]

    def for_target(self, agent_id: int, kind: str, target_id: int, *, limit: int = 200) -> list[Change]:
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM memory_history WHERE agent_id = ? AND target_kind = ? AND target_id = ?"
            " ORDER BY id DESC LIMIT ?",
            (agent_id, kind, target_id, limit),
        )
        return [_change(r) for r in rows]

    def later_changes(self, change: Change) -> list[Change]:
        """Changes to the same target after ``change``, oldest first (what a revert would undo too)."""
        if change.kind == BLOCK:
            rows = self._db.query(
                f"SELECT {_COLUMNS} FROM memory_history WHERE agent_id = ? AND target_kind = ? AND target_label = ?"
                " AND id > ? ORDER BY id",
                (change.agent_id, BLOCK, change.label, change.id),
            )
        else:
            rows = self._db.query(
                f"SELECT {_COLUMNS} FROM memory_history WHERE agent_id = ? AND target_kind = ? AND target_id = ?"
                " AND id > ? ORDER BY id",
                (change.agent_id, change.kind, change.target_id, change.id),
            )
        return [_change(r) for r in rows]

    def newest_unreverted(self, agent_id: int, kinds: tuple[str, ...], *, source: str | None = None) -> Change | None:
        """The newest change of ``kinds`` (by ``source``) that is not a revert and that no later
        change reverts: what an undo button undoes next."""
        where = [f"h.agent_id = ? AND h.target_kind IN ({','.join('?' * len(kinds))}) AND h.reverts IS NULL"]
        params: list[Any] = [agent_id, *kinds]
        if source is not None:
            where.append("h.source = ?")
            params.append(source)
        columns = ", ".join("h." + c.strip() for c in _COLUMNS.split(","))
        row = self._db.query_one(
            f"SELECT {columns} FROM memory_history h WHERE {' AND '.join(where)}"
            " AND NOT EXISTS (SELECT 1 FROM memory_history r WHERE r.reverts = h.id) ORDER BY h.id DESC LIMIT 1",
            tuple(params),
        )
        return _change(row) if row else None

    def latest_for_block(self, agent_id: int, label: str) -> Change | None:
        changes = self.for_block(agent_id, label, limit=1)
        return changes[0] if changes else None

    def count(self, agent_id: int) -> int:
        return int(self._db.scalar("SELECT COUNT(*) FROM memory_history WHERE agent_id = ?", (agent_id,)))

    # --- carrying history between stores (agent files) -------------------------------------
    def restore(
        self,
        agent_id: int,
        change: dict[str, Any],
        *,
        target_id: int | None,
        message_ids: dict[Any, int],
        reverts: int | None = None,
    ) -> int:
        """Insert an exported change as it was (its own time and source); ``message_ids`` maps
        the file's message references to this store's ids."""
        cursor = self._db.execute(
            f"INSERT INTO memory_history({_COLUMNS.split(', ', 1)[1]})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                agent_id,
                change["kind"],
                target_id,
                change.get("label", ""),
                change["action"],
                change.get("before"),
                change.get("after"),
                None if change.get("before_meta") is None else json.dumps(change["before_meta"], ensure_ascii=False),
                None if change.get("after_meta") is None else json.dumps(change["after_meta"], ensure_ascii=False),
                change["source"],
                change["at"],
                message_ids.get(change.get("message")),
                message_ids.get(change.get("step")),
                None,
                reverts,
                change.get("note", ""),
            ),
        )
        return int(cursor.lastrowid)

    def relink(
        self,
        change_id: int,
        target_id: int | None,
        before_meta: dict[str, Any] | None,
        after_meta: dict[str, Any] | None,
    ) -> None:
        """Point a carried change, and the rows its meta names, at this store's rows; a change
        whose rows did not come along loses them (it stays listed, not revertible)."""
        self._db.execute(
            "UPDATE memory_history SET target_id = ?, before_meta = ?, after_meta = ? WHERE id = ?",
            (
                target_id,
                None if before_meta is None else json.dumps(before_meta, ensure_ascii=False),
                None if after_meta is None else json.dumps(after_meta, ensure_ascii=False),
                change_id,
            ),
        )

    def retarget(self, change_id: int, target_id: int) -> None:
        """Point a carried change at the row it concerns in this store (ids change on import)."""
        self._db.execute("UPDATE memory_history SET target_id = ? WHERE id = ?", (target_id, change_id))


def export_change(
    change: Change, message_refs: dict[int, Any], change_refs: dict[int, int] | None = None
) -> dict[str, Any]:
    """A change as plain JSON, its messages named by ``message_refs`` (the file's ids) and the
    change it reverts by its position in the exported list (``change_refs``)."""
    return {
        "kind": change.kind,
        "label": change.label,
        "action": change.action,
        "before": change.before,
        "after": change.after,
        "before_meta": change.before_meta,
        "after_meta": change.after_meta,
        "source": change.source,
        "at": iso(change.at),
        "message": message_refs.get(change.message_id) if change.message_id else None,
        "step": message_refs.get(change.step_id) if change.step_id else None,
        "note": change.note,
        "reverts": (change_refs or {}).get(change.reverts) if change.reverts else None,
    }
