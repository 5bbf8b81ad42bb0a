"""Archival memory: an unbounded store of passages searched by meaning.

Passages live in ``passages`` (text, citation, time) with an FTS5 index; their vectors live in a
sqlite-vec ``vec0`` table partitioned by agent. The store records which embedding model made the
vectors (``embedding_space``) and refuses to mix models. Inserts, edits and deletes made here are
recorded in the memory history (which call or document, before and after) in the same transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from desktop.core.clock import Clock, iso, parse_iso
from desktop.core.embedding import Embedder
from desktop.core.memory.history import AGENT, CREATE, DELETE, PASSAGE, UPDATE, USER, Cause, MemoryHistory
from desktop.core.storage import Database
from desktop.core.text.chunking import chunk_text
from desktop.errors import EmbeddingMismatchError, StalePassageError

#: Historic MemGPT chunk size for archival inserts.
INSERT_CHUNK_TOKENS = 300
#: Candidates fetched once per query and paged through (MemGPT fetched the top 100).
SEARCH_DEPTH = 100


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
class NewPassage:
    """A passage to store as it is (an import or an undo), with its own time and citation."""

    text: str
    created_at: datetime
    tags: list[str]
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


@dataclass(frozen=True)
class PassageHit:
    passage: Passage
    score: float  # higher is better


@dataclass(frozen=True)
class PassagePage:
    hits: list[PassageHit]
    total: int
    page: int
    page_size: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.page_size))


_SELECT = (
    "SELECT p.id, p.agent_id, p.text, p.created_at, p.tags, p.document_id, d.title, d.path, p.page, p.section,"
    " p.char_start, p.char_end FROM passages p LEFT JOIN documents d ON d.id = p.document_id"
)


def _passage(row) -> Passage:
    return Passage(
        row[0], row[1], row[2], parse_iso(row[3]), json.loads(row[4]), Citation(row[5], row[6], row[7], row[8], row[9], row[10], row[11])
    )


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


def vector_blob(vector: np.ndarray) -> bytes:
    """sqlite-vec reads raw little-endian float32."""
    return np.asarray(vector, dtype="<f4").tobytes()


class ArchivalMemory:
    def __init__(self, db: Database, embedder: Embedder, clock: Clock, history: MemoryHistory | None = None) -> None:
        self._db = db
        self._embedder = embedder
        self._clock = clock
        self._space_checked = False
        self.history = history or MemoryHistory(db, clock)

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    # --- the embedding space ---------------------------------------------------------------
    def ensure_space(self) -> None:
        """Create the vector table for this embedder, or check that the store uses the same model."""
        if self._space_checked:
            return
        row = self._db.query_one("SELECT model_id, dimension FROM embedding_space WHERE id = 1")
        if row is None:
            with self._db.transaction():
                self._db.execute(
                    "INSERT INTO embedding_space(id, model_id, dimension) VALUES (1, ?, ?)",
                    (self._embedder.model_id, self._embedder.dimension),
                )
                self._db.execute(
                    "CREATE VIRTUAL TABLE IF NOT EXISTS passages_vec USING vec0("
                    f"agent_id integer partition key, embedding float[{int(self._embedder.dimension)}] distance_metric=cosine)"
                )
        elif (row[0], row[1]) != (self._embedder.model_id, self._embedder.dimension):
            raise EmbeddingMismatchError(
                f"This store's archival vectors were made by {row[0]} ({row[1]} dimensions), not {self._embedder.model_id}",
                hint="use the same embedding model, or re-embed the archive",
            )
        self._space_checked = True

    # --- writing ---------------------------------------------------------------------------
    def insert(
        self, agent_id: int, content: str, *, tags: list[str] | None = None, source: str = AGENT, cause: Cause | None = None
    ) -> list[int]:
        """Chunk, embed and store ``content``. Returns the new passage ids."""
        chunks = chunk_text(content, max_tokens=INSERT_CHUNK_TOKENS) or []
        texts = [c.text for c in chunks]
        if not texts:
            return []
        vectors = self._embedder.embed(texts)
        self.ensure_space()
        now = iso(self._clock.now())
        ids = []
        with self._db.transaction():
            for text, vector in zip(texts, vectors):
                cursor = self._db.execute(
                    "INSERT INTO passages(agent_id, text, created_at, tags, embedded) VALUES (?, ?, ?, ?, 1)",
                    (agent_id, text, now, json.dumps(tags or [])),
                )
                self._db.execute(
                    "INSERT INTO passages_vec(rowid, agent_id, embedding) VALUES (?, ?, ?)",
                    (cursor.lastrowid, agent_id, vector_blob(vector)),
                )
                ids.append(cursor.lastrowid)
                self.history.record(
                    agent_id, PASSAGE, cursor.lastrowid, CREATE, source=source, after=text, label=label_for(text),
                    after_meta={"tags": tags or [], "created_at": now}, cause=cause,
                )
        return ids

    def add_passages(
        self, agent_id: int, passages: list[NewPassage], vectors: np.ndarray | None, *, source: str, cause: Cause | None = None
    ) -> list[int]:
        """Store passages as they are (already chunked, with their own times and citations) with
        their vectors, or unembedded when ``vectors`` is None. Joins the caller's transaction."""
        if vectors is not None:
            self.ensure_space()
        ids = []
        with self._db.transaction():
            for index, passage in enumerate(passages):
                created_at = iso(passage.created_at)
                cursor = self._db.execute(
                    "INSERT INTO passages(agent_id, text, created_at, tags, document_id, chunk_index, page, section, char_start, char_end, embedded)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        agent_id, passage.text, created_at, json.dumps(passage.tags), passage.document_id, passage.chunk_index,
                        passage.page, passage.section, passage.char_start, passage.char_end, int(vectors is not None),
                    ),
                )
                if vectors is not None:
                    self._db.execute(
                        "INSERT INTO passages_vec(rowid, agent_id, embedding) VALUES (?, ?, ?)",
                        (cursor.lastrowid, agent_id, vector_blob(vectors[index])),
                    )
                ids.append(cursor.lastrowid)
                self.history.record(
                    agent_id, PASSAGE, cursor.lastrowid, CREATE, source=source, after=passage.text, label=label_for(passage.text),
                    after_meta=_passage_meta(passage), cause=cause, prune=False,
                )
            self.history.prune(agent_id)
        return ids

    def store_vectors(self, agent_id: int, passage_ids: list[int], vectors: np.ndarray) -> None:
        """Attach vectors to existing passages (document ingestion embeds after storing text)."""
        self.ensure_space()
        with self._db.transaction():
            for passage_id, vector in zip(passage_ids, vectors):
                self._db.execute("DELETE FROM passages_vec WHERE rowid = ?", (passage_id,))
                self._db.execute(
                    "INSERT INTO passages_vec(rowid, agent_id, embedding) VALUES (?, ?, ?)", (passage_id, agent_id, vector_blob(vector))
                )
                self._db.execute("UPDATE passages SET embedded = 1 WHERE id = ?", (passage_id,))

    def update_text(
        self, passage_id: int, text: str, *, source: str = USER, cause: Cause | None = None, expected_text: str | None = None
    ) -> None:
        """Replace a passage's text (and vector). With ``expected_text``, refuses (StalePassageError)
        when someone changed the passage since the caller read it."""
        row = self._db.query_one("SELECT agent_id, text FROM passages WHERE id = ?", (passage_id,))
        if row is None:
            return
        vector = self._embedder.embed([text])[0]
        self.ensure_space()
        with self._db.transaction():
            before = self._db.scalar("SELECT text FROM passages WHERE id = ?", (passage_id,))
            if before is None:
                return
            if expected_text is not None and before != expected_text:
                raise StalePassageError("The passage was changed since you opened it", hint="reload it and try again")
            self._db.execute("UPDATE passages SET text = ? WHERE id = ?", (text, passage_id))
            self._db.execute("DELETE FROM passages_vec WHERE rowid = ?", (passage_id,))
            self._db.execute("INSERT INTO passages_vec(rowid, agent_id, embedding) VALUES (?, ?, ?)", (passage_id, row[0], vector_blob(vector)))
            if text != before:
                self.history.record(
                    row[0], PASSAGE, passage_id, UPDATE, source=source, before=before, after=text, label=label_for(text), cause=cause
                )

    def delete(self, passage_ids: list[int], *, source: str = USER, cause: Cause | None = None) -> None:
        with self._db.transaction():
            for passage_id in passage_ids:
                passage = self._raw(passage_id)
                if self._has_vec_table():
                    self._db.execute("DELETE FROM passages_vec WHERE rowid = ?", (passage_id,))
                self._db.execute("DELETE FROM passages WHERE id = ?", (passage_id,))
                if passage is not None:
                    agent_id, new = passage
                    self.history.record(
                        agent_id, PASSAGE, passage_id, DELETE, source=source, before=new.text, label=label_for(new.text),
                        before_meta=_passage_meta(new), cause=cause,
                    )

    def _raw(self, passage_id: int) -> tuple[int, NewPassage] | None:
        row = self._db.query_one(f"SELECT agent_id, {_STORED} FROM passages WHERE id = ?", (passage_id,))
        if row is None:
            return None
        return row[0], _stored(row[1:])

    def stored(self, agent_id: int, *, after_id: int = 0, limit: int = 500) -> list[tuple[int, NewPassage]]:
        """Passages as stored (with chunk positions), oldest first, for exports: page with ``after_id``."""
        rows = self._db.query(
            f"SELECT id, {_STORED} FROM passages WHERE agent_id = ? AND id > ? ORDER BY id LIMIT ?", (agent_id, after_id, limit)
        )
        return [(row[0], _stored(row[1:])) for row in rows]

    def delete_agent(self, agent_id: int) -> None:
        """vec0 tables have no foreign keys: drop an agent's vectors explicitly."""
        if self._has_vec_table():
            self._db.execute("DELETE FROM passages_vec WHERE agent_id = ?", (agent_id,))

    # --- reading ---------------------------------------------------------------------------
    def count(self, agent_id: int) -> int:
        return int(self._db.scalar("SELECT COUNT(*) FROM passages WHERE agent_id = ?", (agent_id,)))

    def has_document(self, document_id: int) -> bool:
        return bool(self._db.scalar("SELECT 1 FROM documents WHERE id = ?", (document_id,)))

    def get(self, passage_id: int) -> Passage | None:
        row = self._db.query_one(f"{_SELECT} WHERE p.id = ?", (passage_id,))
        return _passage(row) if row else None

    def list(self, agent_id: int, *, offset: int = 0, limit: int = 100) -> list[Passage]:
        rows = self._db.query(f"{_SELECT} WHERE p.agent_id = ? ORDER BY p.id DESC LIMIT ? OFFSET ?", (agent_id, limit, offset))
        return [_passage(r) for r in rows]

    def search(self, agent_id: int, query: str, *, page: int = 0, page_size: int = 5) -> PassagePage:
        """The top ``SEARCH_DEPTH`` passages by meaning and words, paged, each with its citation;
        see desktop.core.retrieval.passages."""
        from desktop.core.retrieval.passages import search_passages

        if self._has_vec_table():
            self.ensure_space()
        return search_passages(self._db, self._embedder, agent_id, query, page, page_size)

    def _has_vec_table(self) -> bool:
        return bool(self._db.scalar("SELECT 1 FROM sqlite_master WHERE name = 'passages_vec'"))
