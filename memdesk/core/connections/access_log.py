"""Which app read or wrote what, and when: one row per MCP request that reached memory.

A row says the operation, the agent, whether it read, wrote, waited for approval or was refused,
and a summary in counts and ids ("5 hits: message 12, passage 3"), never memory's text or the
app's query: a forget must be able to take a topic back, and a log that kept the text would keep
it. Rows older than the mcp_log_days setting go at each write.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.storage import Database

READ, WRITE, PENDING, REFUSED = "read", "write", "pending", "refused"
ACCESSES = (READ, WRITE, PENDING, REFUSED)
#: Longest summary kept (counts and ids only; a long list of ids is cut).
SUMMARY_CHARS = 300
#: Writes between two prunings: the log is pruned now and then, not at every read.
PRUNE_EVERY = 200


@dataclass(frozen=True)
class Access:
    id: int
    at: datetime
    app: str
    agent_id: int | None
    agent: str | None
    operation: str
    access: str
    summary: str


class AccessLog:
    def __init__(self, db: Database, clock: Clock, keep_days: Callable[[], int]) -> None:
        """``keep_days``: the mcp_log_days setting, read at each pruning."""
        self._db = db
        self._clock = clock
        self._keep_days = keep_days
        self._since_prune = PRUNE_EVERY  # the first write prunes

    def record(
        self, app_id: int | None, app: str, agent_id: int | None, operation: str, access: str, summary: str = ""
    ) -> None:
        if access not in ACCESSES:
            raise ValueError(f"Unknown access {access!r}; expected one of {ACCESSES}")
        self._db.execute(
            "INSERT INTO mcp_access_log(at, app_id, app_name, agent_id, operation, access, summary)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (iso(self._clock.now()), app_id, app, agent_id, operation, access, summary[:SUMMARY_CHARS]),
        )
        self._since_prune += 1
        if self._since_prune >= PRUNE_EVERY:
            self.prune()

    def prune(self) -> int:
        self._since_prune = 0
        cutoff = self._clock.now() - timedelta(days=max(1, int(self._keep_days())))
        return int(self._db.execute("DELETE FROM mcp_access_log WHERE at < ?", (iso(cutoff),)).rowcount)

    def recent(self, *, limit: int = 50, app: str | None = None) -> list[Access]:
        """Newest first; only ``app``'s when given."""
        where, params = ("WHERE l.app_name = ? COLLATE NOCASE", [app]) if app else ("", [])
        rows = self._db.query(
            "SELECT l.id, l.at, l.app_name, l.agent_id, a.name, l.operation, l.access, l.summary"
            f" FROM mcp_access_log l LEFT JOIN agents a ON a.id = l.agent_id {where} ORDER BY l.id DESC LIMIT ?",
            (*params, limit),
        )
        return [Access(r[0], parse_iso(r[1], self._clock.zone), r[2], r[3], r[4], r[5], r[6], r[7]) for r in rows]
