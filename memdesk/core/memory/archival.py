"""Archival memory: an unbounded store of passages searched by meaning.

Passages live in ``passages`` (text, citation, time) with an FTS5 index; their vectors live in a
sqlite-vec ``vec0`` table partitioned by agent. The store records which embedding model made the
vectors (``embedding_space``) and refuses to mix models.

This class owns those rows: the agent's tools, document ingestion, import and the UI all write
passages and their vectors through it. Ranking is the ranker's (memdesk.core.retrieval.passages).
Every write is recorded in the memory history in the same transaction: a passage the agent or an
import added, edited or deleted gets its own change (which call, before and after); a document's
chunks are one change per document (its text is the document's, not memory's to keep twice).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo

import numpy as np

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.base.errors import StalePassageError
from memdesk.core.embedding import Embedder
from memdesk.core.memory.history import AGENT, CREATE, DELETE, DOCUMENT, PASSAGE, UPDATE, USER, Cause, MemoryHistory
from memdesk.core.memory.page import Page
from memdesk.core.memory.space import EmbeddingSpace
from memdesk.core.retrieval.passages import PassageRanker
from memdesk.core.storage import Database
from memdesk.core.storage.migrations.m018_sync_identities import uid_expression
from memdesk.core.text.chunking import chunk_for_embedding


@dataclass(frozen=True)
class Citation:
    document_id: int | None
    document: str | None  # title
    path: str | None
    page: int | None
    section: str | None
    char_start: int | None
    char_end: int | None

    def label(self) -> str:
        if self.document is None:
            return ""
        where = [self.document]
        if self.page is not None:
            where.append(f"page {self.page}")
        if self.section:
            where.append(self.section)
        if self.char_start is not None:
            where.append(f"chars {self.char_start}-{self.char_end}")
        return ", ".join(where)


@dataclass(frozen=True)
class Passage:
    id: int
    agent_id: int
    text: str
    created_at: datetime
    tags: list[str]
    citation: Citation


@dataclass(frozen=True)
class PassageHit:
    passage: Passage
    score: float  # higher is better


@dataclass(frozen=True)
class NewPassage:
    """A passage to store; the citation fields are set for document chunks."""

    text: str
    created_at: datetime
    tags: list[str] = field(default_factory=list)
    document_id: int | None = None
    chunk_index: int | None = None
    page: int | None = None
    section: str | None = None
    char_start: int | None = None
    char_end: int | None = None


def label_for(text: str) -> str:
    """A passage's name in the history: its first words."""
    line = " ".join(text.split())
    return line if len(line) <= 60 else line[:59] + "…"


_STORED = "text, created_at, tags, document_id, chunk_index, page, section, char_start, char_end"


def _stored(row) -> NewPassage:
    return NewPassage(row[0], parse_iso(row[1]), json.loads(row[2]), *row[3:])


def _passage_meta(passage: NewPassage) -> dict:
    """What an undo needs to put a deleted passage back as it was."""
    meta = {"tags": passage.tags, "created_at": iso(passage.created_at)}
    for name in ("document_id", "chunk_index", "page", "section", "char_start", "char_end"):
        value = getattr(passage, name)
        if value is not None:
            meta[name] = value
    return meta


_SELECT = (
    "SELECT p.id, p.agent_id, p.text, p.created_at, p.tags, p.document_id, d.title, d.path, p.page, p.section,"
    " p.char_start, p.char_end FROM passages p LEFT JOIN documents d ON d.id = p.document_id"
)


def _passage(row, zone: tzinfo) -> Passage:
    return Passage(
        row[0],
        row[1],
        row[2],
        parse_iso(row[3], zone),
        json.loads(row[4]),
        Citation(row[5], row[6], row[7], row[8], row[9], row[10], row[11]),
    )


class ArchivalMemory:
    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        clock: Clock,
        *,
        ranker: PassageRanker | None = None,
        history: MemoryHistory | None = None,
    ) -> None:
        """``ranker`` holds the store's ranking caches; the composition root passes the store's one
        ranker in (a fresh one otherwise), and the store's one memory history."""
        self._db = db
        self._embedder = embedder
        self._clock = clock
        self.history = history or MemoryHistory(db, clock)
        self._space = EmbeddingSpace(db, embedder)
        self._ranker = ranker or PassageRanker(db, embedder)

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def space(self) -> EmbeddingSpace:
        return self._space

    def ensure_space(self) -> None:
        """Create the vector tables for this embedder, or check that the store uses the same model."""
        self._space.ensure()

    # --- writing ---------------------------------------------------------------------------
    def insert(
        self,
        agent_id: int,
        content: str,
        *,
        tags: list[str] | None = None,
        source: str = AGENT,
        cause: Cause | None = None,
    ) -> list[int]:
        """Chunk (to what the embedder reads), embed and store ``content`` (the agent's
        archival_memory_insert). Returns the new passage ids. MemGPT cut 300 words; that is more
        than MiniLM reads, and the rest would never be embedded."""
        chunks = chunk_for_embedding(content, self._embedder)
        texts = [c.text for c in chunks]
        if not texts:
            return []
        vectors = self._embedder.embed(texts)
        now = self._clock.now()
        return self.add(
            agent_id, [NewPassage(text, now, list(tags or [])) for text in texts], vectors, source=source, cause=cause
        )

    def add(
        self,
        agent_id: int,
        passages: Sequence[NewPassage],
        vectors: np.ndarray | None = None,
        *,
        source: str = USER,
        cause: Cause | None = None,
    ) -> list[int]:
        """Store passages as given (no chunking), with their vectors when known; without, they are
        searchable by their words at once and embedded later (``store_vectors``). One transaction.
        ``source`` and ``cause`` say who added them and why (the memory history)."""
        if vectors is not None:
            self._space.ensure()
        with self._db.transaction():
            # Rows in a few statements (Database.insert_rows), each row's id given: the ids SQLite
            # would have chosen (one above the largest, the write lock held), so none is read back.
            # The stable id is m018's own expression in the insert, which spares every row the
            # update its trigger makes when an insert leaves it out.
            first = int(self._db.scalar("SELECT COALESCE(MAX(id), 0) FROM passages")) + 1
            ids = list(range(first, first + len(passages)))
            self._db.insert_rows(
                "INSERT INTO passages(id, agent_id, text, created_at, tags, document_id, chunk_index, page, section,"
                " char_start, char_end, embedded, uid) VALUES",
                f"(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {uid_expression()})",
                [
                    (
                        passage_id,
                        agent_id,
                        passage.text,
                        iso(passage.created_at),
                        json.dumps(passage.tags),
                        passage.document_id,
                        passage.chunk_index,
                        passage.page,
                        passage.section,
                        passage.char_start,
                        passage.char_end,
                        int(vectors is not None),
                    )
                    for passage_id, passage in zip(ids, passages, strict=True)
                ],
            )
            if vectors is not None:
                self._space.write("passages", agent_id, ids, vectors, marked=True)
            self._record_added(agent_id, passages, ids, source, cause)
        if vectors is not None and not self._db.in_transaction:  # committed: the index may read it
            self._ranker.follow(agent_id)
        return ids

    def _record_added(
        self, agent_id: int, passages: Sequence[NewPassage], ids: list[int], source: str, cause: Cause | None
    ) -> None:
        chunks: dict[int, int] = {}
        for passage, passage_id in zip(passages, ids, strict=True):
            if passage.document_id is not None:
                chunks[passage.document_id] = chunks.get(passage.document_id, 0) + 1
                continue
            self.history.record(
                agent_id,
                PASSAGE,
                passage_id,
                CREATE,
                source=source,
                after=passage.text,
                label=label_for(passage.text),
                after_meta=_passage_meta(passage),
                cause=cause,
                prune=False,
            )
        for document_id, count in chunks.items():
            self.history.record(
                agent_id,
                DOCUMENT,
                document_id,
                CREATE,
                source=source,
                after=f"{count} passage(s) from this document",
                label=self._document_title(document_id),
                after_meta={"passages": count},
                cause=cause,
                prune=False,
            )
        self.history.prune(agent_id)

    def _document_title(self, document_id: int) -> str:
        return str(
            self._db.scalar("SELECT title FROM documents WHERE id = ?", (document_id,)) or f"document {document_id}"
        )

    def store_vectors(self, agent_id: int, passage_ids: list[int], vectors: np.ndarray) -> None:
        """Attach vectors to existing passages (document ingestion embeds after storing text)."""
        self._space.write("passages", agent_id, passage_ids, vectors)

    def update_text(
        self,
        passage_id: int,
        text: str,
        *,
        source: str = USER,
        cause: Cause | None = None,
        expected_text: str | None = None,
    ) -> None:
        """Replace a passage's text (and vector). With ``expected_text``, refuses (StalePassageError)
        when someone changed the passage since the caller read it."""
        row = self._db.query_one("SELECT agent_id FROM passages WHERE id = ?", (passage_id,))
        if row is None:
            return
        vector = self._embedder.embed([text])[0]
        with self._db.transaction():
            before = self._db.scalar("SELECT text FROM passages WHERE id = ?", (passage_id,))
            if before is None:
                return
            if expected_text is not None and before != expected_text:
                raise StalePassageError("The passage was changed since you opened it", hint="reload it and try again")
            self._db.execute("UPDATE passages SET text = ? WHERE id = ?", (text, passage_id))
            self._space.write("passages", row[0], [passage_id], [vector])
            if text != before:
                self.history.record(
                    row[0],
                    PASSAGE,
                    passage_id,
                    UPDATE,
                    source=source,
                    before=before,
                    after=text,
                    label=label_for(text),
                    cause=cause,
                )

    def delete(self, passage_ids: list[int], *, source: str = USER, cause: Cause | None = None) -> None:
        with self._db.transaction():
            gone = [(passage_id, self._raw(passage_id)) for passage_id in passage_ids]
            self._space.delete("passages", passage_ids)
            for passage_id, stored in gone:
                self._db.execute("DELETE FROM passages WHERE id = ?", (passage_id,))
                if stored is not None:
                    agent_id, passage = stored
                    self.history.record(
                        agent_id,
                        PASSAGE,
                        passage_id,
                        DELETE,
                        source=source,
                        before=passage.text,
                        label=label_for(passage.text),
                        before_meta=_passage_meta(passage),
                        cause=cause,
                    )

    def delete_documents(self, document_ids: list[int], *, source: str = USER, cause: Cause | None = None) -> None:
        """Delete every passage cut from these documents, with its vector (the document rows are
        the caller's). vec0 tables have no foreign keys, so the vectors go first, explicitly."""
        if not document_ids:
            return
        marks = ",".join("?" * len(document_ids))
        with self._db.transaction():
            counts = self._db.query(
                f"SELECT document_id, agent_id, COUNT(*) FROM passages WHERE document_id IN ({marks})"
                " GROUP BY document_id, agent_id",
                document_ids,
            )
            ids = [
                r[0]
                for r in self._db.query(
                    f"SELECT id FROM passages WHERE document_id IN ({marks}) AND embedded = 1", document_ids
                )
            ]
            self._space.delete("passages", ids)
            self._db.execute(f"DELETE FROM passages WHERE document_id IN ({marks})", document_ids)
            for document_id, agent_id, count in counts:
                self.history.record(
                    agent_id,
                    DOCUMENT,
                    document_id,
                    DELETE,
                    source=source,
                    before=f"{count} passage(s) from this document",
                    label=self._document_title(document_id),
                    before_meta={"passages": count},
                    cause=cause,
                )

    def _raw(self, passage_id: int) -> tuple[int, NewPassage] | None:
        row = self._db.query_one(f"SELECT agent_id, {_STORED} FROM passages WHERE id = ?", (passage_id,))
        if row is None:
            return None
        return row[0], _stored(row[1:])

    def stored(self, agent_id: int, *, after_id: int = 0, limit: int = 500) -> list[tuple[int, NewPassage]]:
        """Passages as stored (with chunk positions), oldest first, for exports: page with ``after_id``."""
        rows = self._db.query(
            f"SELECT id, {_STORED} FROM passages WHERE agent_id = ? AND id > ? ORDER BY id LIMIT ?",
            (agent_id, after_id, limit),
        )
        return [(row[0], _stored(row[1:])) for row in rows]

    def has_document(self, document_id: int) -> bool:
        return bool(self._db.scalar("SELECT 1 FROM documents WHERE id = ?", (document_id,)))

    # --- reading ---------------------------------------------------------------------------
    def count(self, agent_id: int) -> int:
        return int(self._db.scalar("SELECT COUNT(*) FROM passages WHERE agent_id = ?", (agent_id,)))

    def has_any(self, agent_id: int) -> bool:
        return bool(self._db.scalar("SELECT 1 FROM passages WHERE agent_id = ? LIMIT 1", (agent_id,)))

    def get(self, passage_id: int) -> Passage | None:
        row = self._db.query_one(f"{_SELECT} WHERE p.id = ?", (passage_id,))
        return _passage(row, self._clock.zone) if row else None

    def list(self, agent_id: int, *, offset: int = 0, limit: int = 100) -> list[Passage]:
        rows = self._db.query(
            f"{_SELECT} WHERE p.agent_id = ? ORDER BY p.id DESC LIMIT ? OFFSET ?", (agent_id, limit, offset)
        )
        zone = self._clock.zone  # read once: the user's zone is a settings read (a page took 0.5 s at 500 rows)
        return [_passage(r, zone) for r in rows]

    def get_many(self, passage_ids: builtins.list[int]) -> builtins.list[Passage]:
        """The passages with these ids, in the order given; ids that no longer exist are skipped."""
        if not passage_ids:
            return []
        marks = ",".join("?" * len(passage_ids))
        zone = self._clock.zone
        found = {
            row[0]: _passage(row, zone) for row in self._db.query(f"{_SELECT} WHERE p.id IN ({marks})", passage_ids)
        }
        return [found[i] for i in passage_ids if i in found]

    def search(self, agent_id: int, query: str, *, page: int = 0, page_size: int = 5) -> Page[PassageHit]:
        """The best passages by meaning and words (the top 100, as MemGPT fetched), paged, each
        with its citation; see memdesk.core.retrieval.passages."""
        self._space.check()
        ranked = self._ranker.rank(agent_id, query)
        window = ranked[page * page_size : (page + 1) * page_size]
        passages = {p.id: p for p in self.get_many([hit.id for hit in window])}
        hits = [PassageHit(passages[hit.id], hit.score) for hit in window if hit.id in passages]
        return Page(hits, len(ranked), page, page_size)
