"""Recall memory: every message ever exchanged, in or out of the context window.

Messages are never deleted by eviction; the agent row's ``context_start_id`` marks which ones are
still in context. Conversations imported from other assistants (memdesk.core.transfer.history) are
messages too, marked with their ``conversation_id``: searches find them like any message, while the
agent's own chat (the context window, the transcript, the reply rules) is the rows without one.
``search_text`` holds what a person would search for (the user's words, the agent's messages and
thoughts), without the JSON envelope the model sees.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.embedding import Embedder
from memdesk.core.memory.page import Page
from memdesk.core.memory.space import EmbeddingSpace
from memdesk.core.retrieval.learned import LearnedScorer
from memdesk.core.retrieval.messages import MessageRank, MessageRanker
from memdesk.core.retrieval.query import contains_casefold
from memdesk.core.storage import Database

#: Messages embedded per transaction when a search finds some without vectors.
INDEX_BATCH = 512


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
    conversation_id: int | None = None  # an imported conversation's (None: the agent's own chat)

    @property
    def imported(self) -> bool:
        return self.conversation_id is not None


@dataclass(frozen=True)
class ImportedMessage:
    """One message of a conversation imported from another assistant: ``author`` None for the
    person (the user), the other assistant's name for its replies."""

    role: str  # "user" or "assistant"
    text: str
    created_at: datetime
    author: str | None
    external_id: str
    imported_at: datetime | None = None  # when it first came into MemDesk (None: now)


@dataclass(frozen=True)
class RankedMessage:
    message: Message
    score: float
    exact: bool  # the query occurs in the message verbatim (case-insensitive)


_COLUMNS = "id, agent_id, created_at, role, kind, content, search_text, author, function_name, step_id, conversation_id"
#: The agent's own chat: what is not an imported conversation.
CHAT = "conversation_id IS NULL"
#: The order of a conversation as people read it (transcript, exports, paging, search by date):
#: by when each message was written, so one that another device wrote earlier and that arrived
#: later (sync) stands in its place; the local id, the order of arrival, breaks ties, which keeps
#: a device's own messages of one second in the order it wrote them. The context window keeps
#: arrival order (``since``): a message that arrives late is news to this device's model.
TIME_ORDER = "created_at, id"
#: Kinds of an imported conversation's messages: what the person wrote there (knowledge-graph
#: extraction reads it as the user's, as it reads a user_message) and the other assistant's replies.
#: No rule of the chat (owed replies, consolidation's turns) ever takes them for the agent's.
IMPORTED_USER, IMPORTED_REPLY = "imported_user", "imported_reply"


def _message(row, zone: tzinfo = UTC) -> Message:
    return Message(
        row[0], row[1], parse_iso(row[2], zone), row[3], row[4], row[5], row[6], row[7], row[8], row[9], row[10]
    )


def embedding_text(search_text: str, author: str | None) -> str:
    """The speaker is part of what a turn means ("what did Caroline say..."), so it is embedded too."""
    return f"{author}: {search_text}" if author else search_text


class RecallMemory:
    """Owns the ``messages`` rows and their vectors; ranking is the ranker's (memdesk.core.retrieval)."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder | None = None,
        *,
        ranker: MessageRanker | None = None,
        clock: Clock | None = None,
        graph_weight: Callable[[], float] | None = None,
    ) -> None:
        """``embedder`` (optional) adds meaning-based ranking to ``search_text``; messages are
        embedded lazily at search time, so ``add`` stays as fast as an INSERT. ``ranker`` holds the
        store's ranking caches; the composition root passes the store's one ranker in. ``clock``
        gives the user's time zone: messages come back in it and dates are cut in it (else UTC).
        ``graph_weight``: how much searches follow the knowledge graph (the graph_search_expansion
        setting, read at each search; none given: not at all)."""
        self._db = db
        self._clock = clock
        self._embedder = embedder
        self._space = EmbeddingSpace(db, embedder) if embedder is not None else None
        self._ranker = ranker or MessageRanker(db, embedder)
        self._graph_weight = graph_weight or (lambda: 0.0)
        # SQLite's LIKE folds ASCII only; recall search promises case-insensitive matching for
        # every script, so matching uses Python's casefold through a registered SQL function.
        db.create_function("memdesk_contains", 2, contains_casefold)

    def _zone(self) -> tzinfo:
        return self._clock.zone if self._clock is not None else UTC

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
            "INSERT INTO messages(agent_id, created_at, role, kind, content, search_text, author, function_name,"
            " step_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (agent_id, iso(created_at), role, kind, content, search_text, author, function_name, step_id),
        )
        return Message(
            cursor.lastrowid, agent_id, created_at, role, kind, content, search_text, author, function_name, step_id
        )

    def add_imported(
        self,
        agent_id: int,
        conversation_id: int,
        messages: Sequence[ImportedMessage],
        *,
        imported_at: datetime | None = None,
    ) -> list[int]:
        """Messages of an imported conversation (the caller holds the transaction: a conversation
        comes in whole or not at all). Searchable by their words at once; their vectors come in
        batches (``index_pending``). ``imported_at``: when they came into MemDesk (now unless
        given), from which retention counts their days (memdesk.core.memory.forget.retention)."""
        if imported_at is None:
            imported_at = self._clock.now() if self._clock is not None else datetime.now(UTC)
        brought = iso(imported_at)
        ids = []
        for m in messages:
            cursor = self._db.execute(
                "INSERT INTO messages(agent_id, created_at, role, kind, content, search_text, author,"
                " conversation_id, external_id, imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    agent_id,
                    iso(m.created_at),
                    m.role,
                    IMPORTED_USER if m.role == "user" else IMPORTED_REPLY,
                    m.text,
                    m.text,
                    m.author,
                    conversation_id,
                    m.external_id,
                    iso(m.imported_at) if m.imported_at is not None else brought,
                ),
            )
            ids.append(int(cursor.lastrowid))
        return ids

    def get(self, message_id: int) -> Message | None:
        row = self._db.query_one(f"SELECT {_COLUMNS} FROM messages WHERE id = ?", (message_id,))
        return _message(row, self._zone()) if row else None

    def get_many(self, message_ids: list[int]) -> list[Message]:
        """The messages with these ids, in the order given; ids that no longer exist are skipped."""
        if not message_ids:
            return []
        marks = ",".join("?" * len(message_ids))
        zone = self._zone()
        found = {
            row[0]: _message(row, zone)
            for row in self._db.query(f"SELECT {_COLUMNS} FROM messages WHERE id IN ({marks})", message_ids)
        }
        return [found[i] for i in message_ids if i in found]

    def since(self, agent_id: int, first_id: int) -> list[Message]:
        """The agent's own chat from ``first_id`` on (imported conversations are not part of it)."""
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM messages WHERE agent_id = ? AND id >= ? AND {CHAT} ORDER BY id",
            (agent_id, first_id),
        )
        return [_message(r, self._zone()) for r in rows]

    def all(self, agent_id: int) -> list[Message]:
        """The whole chat in the order it reached this store (as the context window reads it)."""
        return self.since(agent_id, 0)

    def as_written(self, agent_id: int) -> list[Message]:
        """The whole chat in ``TIME_ORDER``, as a person reads it (the transcript's export)."""
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM messages WHERE agent_id = ? AND {CHAT} ORDER BY {TIME_ORDER}", (agent_id,)
        )
        return [_message(r, self._zone()) for r in rows]

    def newest(self, agent_id: int, limit: int, *, before_id: int | None = None) -> list[Message]:
        """The newest ``limit`` messages (before ``before_id`` when given), oldest first, in
        ``TIME_ORDER``: a page of the conversation for a view that loads older pages on demand. A
        page never begins with a function's result apart from its call: it then begins at the call."""
        bound = "" if before_id is None else " AND (created_at, id) < (?, ?)"
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM messages WHERE agent_id = ? AND {CHAT}{bound}"
            " ORDER BY created_at DESC, id DESC LIMIT ?",
            (agent_id, limit) if before_id is None else (agent_id, *self._key(before_id), limit),
        )
        zone = self._zone()
        return self._with_call(agent_id, [_message(r, zone) for r in reversed(rows)])

    def between(self, agent_id: int, first_id: int, before_id: int) -> list[Message]:
        """The messages from ``first_id`` up to (not including) ``before_id`` in ``TIME_ORDER``,
        oldest first; from the call on when ``first_id`` is a function's result."""
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM messages WHERE agent_id = ? AND {CHAT}"
            f" AND (created_at, id) >= (?, ?) AND (created_at, id) < (?, ?) ORDER BY {TIME_ORDER}",
            (agent_id, *self._key(first_id), *self._key(before_id)),
        )
        zone = self._zone()
        return self._with_call(agent_id, [_message(r, zone) for r in rows])

    def _key(self, message_id: int) -> tuple[str, int]:
        """Where a message stands in ``TIME_ORDER``; an id no message has (a bound past the newest,
        or a message deleted meanwhile) stands where the message before it in arrival stands."""
        row = self._db.query_one(
            "SELECT created_at FROM messages WHERE id <= ? ORDER BY id DESC LIMIT 1", (message_id,)
        )
        return (row[0] if row else "", message_id)

    def _with_call(self, agent_id: int, page: list[Message]) -> list[Message]:
        first = page[0] if page else None
        if (
            first is not None
            and first.kind == "function_result"
            and first.step_id is not None
            and first.step_id < first.id
        ):
            return self.between(agent_id, first.step_id, first.id) + page
        return page

    def any_before(self, agent_id: int, message_id: int) -> bool:
        """Whether the agent's chat has a message older than ``message_id``."""
        return (
            self._db.scalar(
                f"SELECT 1 FROM messages WHERE agent_id = ? AND {CHAT} AND (created_at, id) < (?, ?) LIMIT 1",
                (agent_id, *self._key(message_id)),
            )
            is not None
        )

    def last_activity(self, agent_id: int) -> datetime | None:
        """When the newest message of the agent was written (None: no message yet)."""
        value = self._db.scalar(
            f"SELECT created_at FROM messages WHERE agent_id = ? AND {CHAT} ORDER BY id DESC LIMIT 1", (agent_id,)
        )
        return parse_iso(value) if value else None

    def last_of_kind(self, agent_id: int, kind: str, at_or_before: int) -> Message | None:
        """The newest message of ``kind`` up to a message id (what the user said before a step)."""
        row = self._db.query_one(
            f"SELECT {_COLUMNS} FROM messages WHERE agent_id = ? AND kind = ? AND id <= ? ORDER BY id DESC LIMIT 1",
            (agent_id, kind, at_or_before),
        )
        return _message(row, self._zone()) if row else None

    def said(self, agent_id: int, limit: int) -> list[str]:
        """The newest ``limit`` texts of the conversation, newest first: the user's messages and
        the agent's replies (what a reply must not copy: memdesk/core/agent/repetition.py)."""
        rows = self._db.query(
            "SELECT search_text FROM messages WHERE agent_id = ? AND search_text != ''"
            " AND (kind = 'user_message' OR (kind = 'assistant_call' AND function_name = 'send_message'))"
            " ORDER BY id DESC LIMIT ?",
            (agent_id, limit),
        )
        return [r[0] for r in rows]

    def last_id(self, agent_id: int) -> int | None:
        """The newest message of the agent's chat."""
        return self._db.scalar(f"SELECT MAX(id) FROM messages WHERE agent_id = ? AND {CHAT}", (agent_id,))

    def count(self, agent_id: int) -> int:
        """Messages of the agent's own chat."""
        return int(self._db.scalar(f"SELECT COUNT(*) FROM messages WHERE agent_id = ? AND {CHAT}", (agent_id,)))

    def imported_count(self, agent_id: int) -> int:
        """Messages of the conversations imported from other assistants."""
        return int(
            self._db.scalar(
                "SELECT COUNT(*) FROM messages WHERE agent_id = ? AND conversation_id IS NOT NULL", (agent_id,)
            )
        )

    def conversation(self, conversation_id: int) -> list[Message]:
        """An imported conversation's messages, in order."""
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM messages WHERE conversation_id = ? ORDER BY id", (conversation_id,)
        )
        return [_message(r, self._zone()) for r in rows]

    def has_before(self, agent_id: int, message_id: int) -> bool:
        """Whether the agent has any message out of the context window that begins at
        ``message_id``: an older one, or one of an imported conversation (not a count: counting a
        million-message conversation took 0.3 s of automatic recall's 300 ms)."""
        return (
            self._db.scalar("SELECT 1 FROM messages WHERE agent_id = ? AND id < ? LIMIT 1", (agent_id, message_id))
            is not None
            or self._db.scalar(
                "SELECT 1 FROM messages WHERE agent_id = ? AND conversation_id IS NOT NULL LIMIT 1", (agent_id,)
            )
            is not None
        )

    def search_text(self, agent_id: int, query: str, *, page: int = 0, page_size: int = 5) -> Page[Message]:
        """With an embedder: messages that contain the query (case-insensitive) first, then the
        most relevant others by BM25 + vectors (memdesk.core.retrieval.messages). Without one:
        case-insensitive substring matches only, newest first."""
        if self._embedder is None:
            query = query.strip()
            where = "agent_id = ? AND search_text != '' AND memdesk_contains(search_text, ?)"
            total = int(self._db.scalar(f"SELECT COUNT(*) FROM messages WHERE {where}", (agent_id, query)))
            rows = self._db.query(
                f"SELECT {_COLUMNS} FROM messages WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
                (agent_id, query, page_size, page * page_size),
            )
            return Page([_message(r, self._zone()) for r in rows], total, page, page_size)
        ranked = self.rank(agent_id, query)
        window = ranked[page * page_size : (page + 1) * page_size]
        return Page(self.get_many([hit.id for hit in window]), len(ranked), page, page_size)

    def search_ranked(self, agent_id: int, query: str, *, page: int = 0, page_size: int = 5) -> list[RankedMessage]:
        """One page of ``search_text`` with each hit's score and whether it matched verbatim."""
        window = self.rank(agent_id, query)[page * page_size : (page + 1) * page_size]
        messages = {m.id: m for m in self.get_many([hit.id for hit in window])}
        return [RankedMessage(messages[hit.id], hit.score, hit.exact) for hit in window if hit.id in messages]

    def rank(
        self,
        agent_id: int,
        query: str,
        *,
        dense: bool = True,
        graph_weight: float | None = None,
        before_id: int | None = None,
    ) -> list[MessageRank]:
        """Every result of the query (ids, scores, exact or not), best first.
        Messages still without vectors are embedded first, so the ranker sees them all.
        ``graph_weight`` (default: the one this recall memory was given) expands the query through
        the knowledge graph."""
        if dense and self._embedder is not None:
            self.index_pending(agent_id)
        weight = self._graph_weight() if graph_weight is None else graph_weight
        return self._ranker.rank(agent_id, query, dense=dense, graph_weight=weight, before_id=before_id)

    def speakers(self, agent_id: int, message_ids: list[int]) -> tuple[frozenset[str], list[str]]:
        """Who speaks in the agent's conversation, and who said each of these messages."""
        return self._ranker.speakers(agent_id, message_ids)

    @property
    def ranker(self) -> MessageRanker:
        """The ranker this memory searches with (benchmarks switch its learned scorer off to compare)."""
        return self._ranker

    @property
    def judged_by(self) -> LearnedScorer | None:
        """The ranking model, when it has a learned "nothing on that" judge."""
        scorer = self._ranker.scorer
        return scorer if scorer is not None and scorer.judge is not None else None

    def warm(self, agent_id: int) -> None:
        """Prepare what the first search of the agent's conversation would read (its timeline)."""
        self._ranker.warm(agent_id, graph=self._graph_weight() > 0)

    # --- vectors ---------------------------------------------------------------------------
    def index_pending(self, agent_id: int, *, limit: int | None = None) -> int:
        """Embed every searchable message of the agent that has no vector yet (at most about
        ``limit``, a batch at a time: an import embeds as it goes). Returns how many.
        Called lazily by searches; may also run from idle time to do that work early."""
        if self._space is None or self._embedder is None:
            return 0
        self._space.ensure()
        done = 0
        while limit is None or done < limit:
            rows = self._db.query(
                "SELECT id, search_text, author FROM messages WHERE agent_id = ? AND embedded = 0"
                " AND search_text != '' ORDER BY id LIMIT ?",
                (agent_id, INDEX_BATCH if limit is None else min(INDEX_BATCH, limit - done)),
            )
            if not rows:
                return done
            vectors = self._embedder.embed([embedding_text(r[1], r[2]) for r in rows])
            self._space.write("messages", agent_id, [r[0] for r in rows], vectors)
            done += len(rows)
        return done

    def search_date(self, agent_id: int, start: date, end: date, *, page: int = 0, page_size: int = 5) -> Page[Message]:
        """Messages between two dates of the user's calendar, both inclusive, oldest first."""
        zone = self._zone()
        lower = iso(datetime.combine(start, time.min, tzinfo=zone))
        upper = iso(datetime.combine(end + timedelta(days=1), time.min, tzinfo=zone))
        where = "agent_id = ? AND search_text != '' AND created_at >= ? AND created_at < ?"
        total = int(self._db.scalar(f"SELECT COUNT(*) FROM messages WHERE {where}", (agent_id, lower, upper)))
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM messages WHERE {where} ORDER BY created_at, id LIMIT ? OFFSET ?",
            (agent_id, lower, upper, page_size, page * page_size),
        )
        return Page([_message(r, self._zone()) for r in rows], total, page, page_size)
