"""The store's one embedding space: which model made the vectors, and the vec0 tables holding them.

Memory owns these tables. Archival memory writes passage vectors and recall memory writes message
vectors, both through an ``EmbeddingSpace``; retrieval only reads them. vec0 tables have no foreign
keys, so whoever deletes rows that have vectors must delete the vectors here first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from memdesk.core.base.errors import EmbeddingMismatchError
from memdesk.core.embedding import Embedder
from memdesk.core.retrieval import vector_codes
from memdesk.core.retrieval.vector_index import TABLES as VECTOR_TABLES
from memdesk.core.storage import Database


def vector_blob(vector: np.ndarray) -> bytes:
    """sqlite-vec reads raw little-endian float32."""
    return np.asarray(vector, dtype="<f4").tobytes()


def has_vector_table(db: Database, kind: str) -> bool:
    return db.has_table(VECTOR_TABLES[kind])


def delete_agent_vectors(db: Database, agent_id: int) -> None:
    """Drop every vector of an agent (its rows go by ON DELETE CASCADE; vec0 rows cannot)."""
    with db.transaction():
        for kind, table in VECTOR_TABLES.items():
            if has_vector_table(db, kind):
                db.execute(f"DELETE FROM {table} WHERE agent_id = ?", (agent_id,))
        vector_codes.drop_agent(db, agent_id)


class EmbeddingSpace:
    """The embedder a store's vectors come from, and the one place that writes vectors."""

    def __init__(self, db: Database, embedder: Embedder) -> None:
        self._db = db
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    def ensure(self) -> None:
        """Record the embedder on first use and create both vector tables; refuse another model.

        A read when all is in place: searches must not take the write lock."""
        row = self._db.query_one("SELECT model_id, dimension FROM embedding_space WHERE id = 1")
        if row is not None and (row[0], row[1]) != (self._embedder.model_id, self._embedder.dimension):
            raise EmbeddingMismatchError(
                f"This store's vectors were made by {row[0]} ({row[1]} dimensions), not {self._embedder.model_id}",
                hint="use the same embedding model, or re-embed the store with `memdesk ingest --reembed`",
            )
        if row is not None and all(has_vector_table(self._db, kind) for kind in VECTOR_TABLES):
            return
        dimension = int(self._embedder.dimension)
        with self._db.transaction():
            if row is None:
                self._db.execute(
                    "INSERT OR IGNORE INTO embedding_space(id, model_id, dimension) VALUES (1, ?, ?)",
                    (self._embedder.model_id, dimension),
                )
            for table in VECTOR_TABLES.values():
                self._db.execute(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
                    f"agent_id integer partition key, embedding float[{dimension}] distance_metric=cosine)"
                )

    def check(self) -> None:
        """Refuse a store made by another model, without recording this one if none is yet."""
        if any(has_vector_table(self._db, kind) for kind in VECTOR_TABLES):
            self.ensure()

    def write(
        self,
        kind: str,
        agent_id: int,
        row_ids: Sequence[int],
        vectors: Iterable[np.ndarray],
        *,
        marked: bool = False,
    ) -> None:
        """Store (or replace) the vectors of rows and mark the rows embedded, in one transaction.
        ``marked``: the rows were inserted in this transaction already marked (``embedded = 1``,
        which their insert's triggers counted), so none is written a second time to mark it."""
        self.ensure()
        table = VECTOR_TABLES[kind]
        vectors = np.asarray(vectors if isinstance(vectors, np.ndarray) else list(vectors), dtype=np.float32).reshape(
            len(row_ids), -1
        )
        with self._db.transaction():
            # executemany: one statement each for the whole batch (a document's chunks), not two a row
            self._db.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(row_id,) for row_id in row_ids])
            self._db.executemany(
                f"INSERT INTO {table}(rowid, agent_id, embedding) VALUES (?, ?, ?)",
                [(row_id, agent_id, vector_blob(vector)) for row_id, vector in zip(row_ids, vectors, strict=True)],
            )
            if not marked:
                self._db.executemany(f"UPDATE {kind} SET embedded = 1 WHERE id = ?", [(row_id,) for row_id in row_ids])
            vector_codes.write(self._db, kind, agent_id, list(row_ids), vectors)

    def delete(self, kind: str, row_ids: Sequence[int]) -> None:
        if row_ids and has_vector_table(self._db, kind):
            marks = ",".join("?" * len(row_ids))
            with self._db.transaction():
                self._db.execute(f"DELETE FROM {VECTOR_TABLES[kind]} WHERE rowid IN ({marks})", list(row_ids))
                vector_codes.remove(self._db, kind, list(row_ids))

    def reset(self) -> None:
        """Switch the store to this embedder: drop every vector and mark all passages and messages
        for embedding again. Explicit only: vectors from two models are never mixed."""
        with self._db.transaction():
            for table in VECTOR_TABLES.values():
                self._db.execute(f"DROP TABLE IF EXISTS {table}")
            self._db.execute("DELETE FROM embedding_space")
            vector_codes.drop_all(self._db)
            for kind in VECTOR_TABLES:
                self._db.execute(f"UPDATE {kind} SET embedded = 0 WHERE embedded = 1")
            self._db.execute("UPDATE vector_generation SET gen = gen + 1")
            self.ensure()
