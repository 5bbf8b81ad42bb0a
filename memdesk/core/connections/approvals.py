"""Writes from apps the user does not trust, waiting for the user.

A pending write keeps what the app asked (the operation, its arguments, the app's reason) until
the user applies it (as asked, or edited), or rejects it. Applying runs the same memory operation
a trusted app's write runs, so the memory history records it with the app named as its cause.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.base.errors import MemDeskError
from memdesk.core.storage import Database

PENDING, APPLIED, REJECTED, FAILED = "pending", "applied", "rejected", "failed"


@dataclass(frozen=True)
class Approval:
    id: int
    app_id: int | None
    app: str
    agent_id: int
    agent: str
    operation: str
    arguments: dict[str, Any]
    reason: str
    status: str
    created_at: datetime
    decided_at: datetime | None
    outcome: str


_SELECT = (
    "SELECT p.id, p.app_id, p.app_name, p.agent_id, a.name, p.operation, p.arguments, p.reason, p.status,"
    " p.created_at, p.decided_at, p.outcome FROM mcp_approvals p JOIN agents a ON a.id = p.agent_id"
)


class Approvals:
    """Owns ``mcp_approvals``."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def _approval(self, row) -> Approval:
        zone = self._clock.zone
        return Approval(
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            row[5],
            json.loads(row[6]),
            row[7],
            row[8],
            parse_iso(row[9], zone),
            parse_iso(row[10], zone) if row[10] else None,
            row[11],
        )

    def add(
        self, app_id: int, app: str, agent_id: int, operation: str, arguments: dict[str, Any], reason: str
    ) -> Approval:
        cursor = self._db.execute(
            "INSERT INTO mcp_approvals(app_id, app_name, agent_id, operation, arguments, reason, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                app_id,
                app,
                agent_id,
                operation,
                json.dumps(arguments, ensure_ascii=False),
                reason,
                iso(self._clock.now()),
            ),
        )
        return self.get(int(cursor.lastrowid))

    def get(self, approval_id: int) -> Approval:
        row = self._db.query_one(f"{_SELECT} WHERE p.id = ?", (approval_id,))
        if row is None:
            raise MemDeskError(f"No write waiting for approval has the number {approval_id}")
        return self._approval(row)

    def pending(self, *, agent_id: int | None = None) -> list[Approval]:
        where, params = "WHERE p.status = ?", [PENDING]
        params_: list[Any] = list(params)
        if agent_id is not None:
            where += " AND p.agent_id = ?"
            params_.append(agent_id)
        return [self._approval(r) for r in self._db.query(f"{_SELECT} {where} ORDER BY p.id", params_)]

    def recent(self, *, limit: int = 50) -> list[Approval]:
        return [self._approval(r) for r in self._db.query(f"{_SELECT} ORDER BY p.id DESC LIMIT ?", (limit,))]

    def decide(
        self, approval_id: int, status: str, outcome: str = "", *, arguments: dict[str, Any] | None = None
    ) -> Approval:
        """Close a pending write (inside the caller's transaction when it applies one); refuses one
        already decided, so two windows or a window and a terminal cannot apply it twice."""
        changed = self._db.execute(
            "UPDATE mcp_approvals SET status = ?, outcome = ?, decided_at = ?,"
            " arguments = COALESCE(?, arguments) WHERE id = ? AND status = ?",
            (
                status,
                outcome,
                iso(self._clock.now()),
                None if arguments is None else json.dumps(arguments, ensure_ascii=False),
                approval_id,
                PENDING,
            ),
        ).rowcount
        if not changed:
            current = self.get(approval_id)
            raise MemDeskError(f"Write {approval_id} from {current.app} was {current.status} already")
        return self.get(approval_id)
