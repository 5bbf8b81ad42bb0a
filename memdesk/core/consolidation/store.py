"""Where idle-time consolidation keeps its state (tables from migration m003).

A *run* is one consolidation pass over a range of messages. It is created before the first model
call and marked done when the pass finishes; a run still ``running`` after a crash or a cancel is
resumed on the same range, with the changes it already made shown to the model so it does not
make them twice. The watermark, the last message a finished run read, is where the next run
starts.

A *change* is one memory-editing call the pass made: ``applied`` (mode apply), ``failed`` (the
call was invalid; the model was told), or ``pending`` (mode ask) until the user ``accepted`` or
``rejected`` it. Every change is written in the same transaction as its effect on memory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.storage import Database

RUNNING, DONE = "running", "done"
APPLIED, FAILED, PENDING, ACCEPTED, REJECTED = "applied", "failed", "pending", "accepted", "rejected"
#: Statuses of a change whose effect is in memory.
IN_MEMORY = (APPLIED, ACCEPTED)


@dataclass(frozen=True)
class Run:
    id: int
    agent_id: int
    first_message_id: int
    last_message_id: int
    mode: str
    status: str
    steps: int
    started_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True)
class Change:
    id: int
    run_id: int
    agent_id: int
    function: str
    arguments: dict[str, Any]
    thoughts: str
    status: str
    result: str
    created_at: datetime
    decided_at: datetime | None

    def describe(self) -> str:
        """One line for people: what the change does to memory."""
        a = self.arguments
        if self.function == "core_memory_append":
            return f"add to {a.get('label', '?')}: {a.get('content', '')}"
        if self.function == "core_memory_replace":
            new = a.get("new_content", "")
            if not new:
                return f"delete from {a.get('label', '?')}: {a.get('old_content', '')}"
            return f"in {a.get('label', '?')}, replace {a.get('old_content', '')!r} with {new!r}"
        if self.function == "archival_memory_insert":
            return f"save to archival memory: {a.get('content', '')}"
        shown = ", ".join(f"{k}={v!r}" for k, v in a.items())
        return f"{self.function}({shown})"


_RUN_COLUMNS = "id, agent_id, first_message_id, last_message_id, mode, status, steps, started_at, finished_at"
_CHANGE_COLUMNS = "id, run_id, agent_id, function, arguments, thoughts, status, result, created_at, decided_at"


def _run(row) -> Run:
    return Run(
        row[0], row[1], row[2], row[3], row[4], row[5], row[6], parse_iso(row[7]), parse_iso(row[8]) if row[8] else None
    )


def _change(row) -> Change:
    return Change(
        row[0],
        row[1],
        row[2],
        row[3],
        json.loads(row[4]),
        row[5],
        row[6],
        row[7],
        parse_iso(row[8]),
        parse_iso(row[9]) if row[9] else None,
    )


class ConsolidationStore:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    # --- runs ----------------------------------------------------------------------------------
    def watermark(self, agent_id: int) -> int:
        """The last message a finished run read (0 before the first)."""
        value = self._db.scalar(
            "SELECT MAX(last_message_id) FROM consolidation_runs WHERE agent_id = ? AND status = ?", (agent_id, DONE)
        )
        return int(value or 0)

    def unfinished(self, agent_id: int) -> Run | None:
        row = self._db.query_one(
            f"SELECT {_RUN_COLUMNS} FROM consolidation_runs WHERE agent_id = ? AND status = ? ORDER BY id LIMIT 1",
            (agent_id, RUNNING),
        )
        return _run(row) if row else None

    def start(self, agent_id: int, first_message_id: int, last_message_id: int, mode: str) -> Run:
        cursor = self._db.execute(
            "INSERT INTO consolidation_runs(agent_id, first_message_id, last_message_id, mode, status, started_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (agent_id, first_message_id, last_message_id, mode, RUNNING, iso(self._clock.now())),
        )
        return self.run(cursor.lastrowid)

    def run(self, run_id: int) -> Run:
        return _run(self._db.query_one(f"SELECT {_RUN_COLUMNS} FROM consolidation_runs WHERE id = ?", (run_id,)))

    def count_step(self, run_id: int) -> None:
        self._db.execute("UPDATE consolidation_runs SET steps = steps + 1 WHERE id = ?", (run_id,))

    def finish(self, run_id: int) -> Run:
        self._db.execute(
            "UPDATE consolidation_runs SET status = ?, finished_at = ? WHERE id = ?",
            (DONE, iso(self._clock.now()), run_id),
        )
        return self.run(run_id)

    def runs(self, agent_id: int, limit: int = 20) -> list[Run]:
        rows = self._db.query(
            f"SELECT {_RUN_COLUMNS} FROM consolidation_runs WHERE agent_id = ? ORDER BY id DESC LIMIT ?",
            (agent_id, limit),
        )
        return [_run(r) for r in rows]

    # --- changes -------------------------------------------------------------------------------
    def add_change(
        self, run: Run, function: str, arguments: dict[str, Any], thoughts: str, status: str, result: str
    ) -> Change:
        cursor = self._db.execute(
            "INSERT INTO consolidation_changes(run_id, agent_id, function, arguments, thoughts, status, result,"
            " created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run.id,
                run.agent_id,
                function,
                json.dumps(arguments, ensure_ascii=False),
                thoughts,
                status,
                result,
                iso(self._clock.now()),
            ),
        )
        return self._written(cursor.lastrowid)

    def change(self, change_id: int) -> Change | None:
        row = self._db.query_one(f"SELECT {_CHANGE_COLUMNS} FROM consolidation_changes WHERE id = ?", (change_id,))
        return _change(row) if row else None

    def changes(self, run_id: int) -> list[Change]:
        rows = self._db.query(
            f"SELECT {_CHANGE_COLUMNS} FROM consolidation_changes WHERE run_id = ? ORDER BY id", (run_id,)
        )
        return [_change(r) for r in rows]

    def pending(self, agent_id: int) -> list[Change]:
        rows = self._db.query(
            f"SELECT {_CHANGE_COLUMNS} FROM consolidation_changes WHERE agent_id = ? AND status = ? ORDER BY id",
            (agent_id, PENDING),
        )
        return [_change(r) for r in rows]

    def recent(self, agent_id: int, limit: int = 50) -> list[Change]:
        rows = self._db.query(
            f"SELECT {_CHANGE_COLUMNS} FROM consolidation_changes WHERE agent_id = ? ORDER BY id DESC LIMIT ?",
            (agent_id, limit),
        )
        return [_change(r) for r in rows]

    def decide(self, change_id: int, status: str, result: str) -> Change:
        self._db.execute(
            "UPDATE consolidation_changes SET status = ?, result = ?, decided_at = ? WHERE id = ?",
            (status, result, iso(self._clock.now()), change_id),
        )
        return self._written(change_id)

    def _written(self, change_id: int) -> Change:
        change = self.change(change_id)
        assert change is not None  # the row this connection just wrote
        return change
