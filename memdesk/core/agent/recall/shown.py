"""Which memories each memories event showed, stored with the event."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memdesk.core.agent.recall.sources import Memory
from memdesk.core.base.clock import iso, parse_iso
from memdesk.core.storage import Database


@dataclass(frozen=True)
class ShownMemory:
    event_id: int  # the memories event (a message row) that showed it
    position: int
    source: str
    ref: str
    at: datetime | None
    where: str
    text: str


class ShownMemories:
    """Which memories each memories event showed: the transcript's "what this reply had in front
    of it", and the refs not to show again while the event is in context."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def record(self, agent_id: int, event_id: int, memories: Sequence[Memory]) -> None:
        self.db.executemany(
            "INSERT INTO recall_shown(agent_id, event_id, position, source, ref, at, place, text)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (agent_id, event_id, n, m.source, m.ref, iso(m.at) if m.at else None, m.where, m.text)
                for n, m in enumerate(memories)
            ],
        )

    def refs_since(self, agent_id: int, first_event_id: int) -> frozenset[str]:
        rows = self.db.query(
            "SELECT ref FROM recall_shown WHERE agent_id = ? AND event_id >= ?", (agent_id, first_event_id)
        )
        return frozenset(r[0] for r in rows)

    def shown_by(self, event_id: int) -> list[ShownMemory]:
        rows = self.db.query(
            "SELECT event_id, position, source, ref, at, place, text FROM recall_shown WHERE event_id = ?"
            " ORDER BY position",
            (event_id,),
        )
        return [ShownMemory(r[0], r[1], r[2], r[3], parse_iso(r[4]) if r[4] else None, r[5], r[6]) for r in rows]
