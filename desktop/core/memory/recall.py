"""Recall memory: every message ever exchanged, in or out of the context window.

Messages are never deleted by eviction; the agent row's ``context_start_id`` marks which ones are
still in context. ``search_text`` holds what a person would search for (the user's words, the
agent's messages and thoughts), without the JSON envelope the model sees.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone

from desktop.core.clock import iso, parse_iso
from desktop.core.storage import Database


@dataclass(frozen=True)
class Message:
    id: int
    agent_id: int
    created_at: datetime
    role: str
    kind: str
    content: str
    search_text: str
    author: str | None = None
    function_name: str | None = None
    step_id: int | None = None


@dataclass(frozen=True)
class MessagePage:
    hits: list[Message]
    total: int
    page: int
    page_size: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.page_size))


_COLUMNS = "id, agent_id, created_at, role, kind, content, search_text, author, function_name, step_id"


def _message(row) -> Message:
    return Message(row[0], row[1], parse_iso(row[2]), row[3], row[4], row[5], row[6], row[7], row[8], row[9])


class RecallMemory:
    def __init__(self, db: Database, embedder=None) -> None:
        """``embedder`` (optional) adds meaning-based ranking to ``search_text``; messages are
        embedded lazily at search time, so ``add`` stays as fast as an INSERT."""
        self._db = db
        self._embedder = embedder
        # SQLite's LIKE folds ASCII only; recall search promises case-insensitive matching for
        # every script, so matching uses Python's casefold through a registered SQL function.
        db.create_function("memdesk_contains", 2, _contains)

    def add(
        self,
        agent_id: int,
        *,
        role: str,
        kind: str,
        content: str,
        created_at: datetime,
        search_text: str = "",
        author: str | None = None,
        function_name: str | None = None,
        step_id: int | None = None,
    ) -> Message:
        cursor = self._db.execute(
            "INSERT INTO messages(agent_id, created_at, role, kind, content, search_text, author, function_name, step_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (agent_id, iso(created_at), role, kind, content, search_text, author, function_name, step_id),
        )
        return Message(cursor.lastrowid, agent_id, created_at, role, kind, content, search_text, author, function_name, step_id)

    def get(self, message_id: int) -> Message | None:
        row = self._db.query_one(f"SELECT {_COLUMNS} FROM messages WHERE id = ?", (message_id,))
        return _message(row) if row else None

    def since(self, agent_id: int, first_id: int) -> list[Message]:
        rows = self._db.query(f"SELECT {_COLUMNS} FROM messages WHERE agent_id = ? AND id >= ? ORDER BY id", (agent_id, first_id))
        return [_message(r) for r in rows]

    def all(self, agent_id: int) -> list[Message]:
        return self.since(agent_id, 0)

    def last_of_kind(self, agent_id: int, kind: str, at_or_before: int) -> Message | None:
        """The newest message of ``kind`` up to a message id (what the user said before a step)."""
        row = self._db.query_one(
            f"SELECT {_COLUMNS} FROM messages WHERE agent_id = ? AND kind = ? AND id <= ? ORDER BY id DESC LIMIT 1", (agent_id, kind, at_or_before)
        )
        return _message(row) if row else None

    def last_id(self, agent_id: int) -> int | None:
        return self._db.scalar("SELECT MAX(id) FROM messages WHERE agent_id = ?", (agent_id,))

    def count(self, agent_id: int) -> int:
        return int(self._db.scalar("SELECT COUNT(*) FROM messages WHERE agent_id = ?", (agent_id,)))

    def count_before(self, agent_id: int, message_id: int) -> int:
        return int(self._db.scalar("SELECT COUNT(*) FROM messages WHERE agent_id = ? AND id < ?", (agent_id, message_id)))

    def search_text(self, agent_id: int, query: str, *, page: int = 0, page_size: int = 5) -> MessagePage:
        """With an embedder: messages that contain the query (case-insensitive) first, then the
        most relevant others by BM25 + vectors (desktop.core.retrieval.messages). Without one:
        case-insensitive substring matches only, newest first."""
        if self._embedder is None:
            query = query.strip()
            where = "agent_id = ? AND search_text != '' AND memdesk_contains(search_text, ?)"
            total = int(self._db.scalar(f"SELECT COUNT(*) FROM messages WHERE {where}", (agent_id, query)))
            rows = self._db.query(
                f"SELECT {_COLUMNS} FROM messages WHERE {where} ORDER BY id DESC LIMIT ? OFFSET ?",
                (agent_id, query, page_size, page * page_size),
            )
            return MessagePage([_message(r) for r in rows], total, page, page_size)
        from desktop.core.retrieval.messages import search_messages

        result = search_messages(self._db, self._embedder, agent_id, query, page, page_size)
        return MessagePage([hit.message for hit in result.hits], result.total, page, page_size)

    def search_date(self, agent_id: int, start: date, end: date, *, page: int = 0, page_size: int = 5) -> MessagePage:
        """Messages between two dates, both inclusive (UTC), oldest first."""
        lower = iso(datetime.combine(start, time.min, tzinfo=timezone.utc))
        upper = iso(datetime.combine(end + timedelta(days=1), time.min, tzinfo=timezone.utc))
        where = "agent_id = ? AND search_text != '' AND created_at >= ? AND created_at < ?"
        total = int(self._db.scalar(f"SELECT COUNT(*) FROM messages WHERE {where}", (agent_id, lower, upper)))
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM messages WHERE {where} ORDER BY created_at, id LIMIT ? OFFSET ?",
            (agent_id, lower, upper, page_size, page * page_size),
        )
        return MessagePage([_message(r) for r in rows], total, page, page_size)


def _contains(haystack: str | None, needle: str | None) -> int:
    if not haystack or needle is None:
        return 0
    return int(needle.casefold() in haystack.casefold())
