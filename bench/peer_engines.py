"""Each engine of bench.peers, configured the way its app configures it. One class per engine with
the same four steps: ``create`` a store and ``ingest`` batches of (texts, vectors), ``open`` it
afresh, ``search`` a query (its vector, and its text for the recipes that also match words), ``add``
one row. Every setting below names where the app sets it (read in the apps' public repositories;
no code copied):

* **AnythingLLM** (Mintplex-Labs/anything-llm, server/utils/vectorDbProviders/lance/index.js):
  embedded LanceDB at ``storage/lancedb``, one table per workspace, created with a document's chunk
  records (``id`` uuid, ``vector``, ``text`` and metadata) and grown by ``table.add``; no index is
  ever built, so a search is LanceDB's flat scan ``search(vector).distanceType("cosine")
  .limit(topN)`` (topN 4 and similarity threshold 0.25 by default; k = 10 here). Its other mode
  ("rerank") re-scores with a cross-encoder downloaded at run time, not BM25.
* **Open WebUI** (open-webui/open-webui, backend/open_webui/retrieval/vector/dbs/chroma.py):
  ``chromadb.PersistentClient(path, Settings(allow_reset=True, anonymized_telemetry=False))``,
  ``get_or_create_collection(name, metadata={"hnsw:space": "cosine"})`` (Chroma's HNSW index with
  its default construction and search settings), inserts through ``create_batches`` and
  ``collection.add``, searches with ``collection.query(query_embeddings, n_results=k)``. Its hybrid
  mode (retrieval/utils.py) adds BM25 over the whole collection, read and indexed anew per query;
  the quality bench measures that recipe.
* **Jan** (janhq/jan, src-tauri/plugins/tauri-plugin-vector-db/src/db.rs): one SQLite file per
  collection, a ``chunks`` table (uuid ``id``, ``text``, float32 ``embedding`` BLOB, ``file_id``,
  ``chunk_file_order``) and ``chunks_vec USING vec0(embedding float[dim])`` (sqlite-vec's brute
  force, L2 distance), rows inserted one by one in a transaction per file with the vector as JSON;
  a search is ``WHERE v.embedding MATCH ? AND k = ?`` joined to ``chunks`` by rowid.
* **GPT4All LocalDocs** (nomic-ai/gpt4all, gpt4all-chat/src/database.cpp): one SQLite file with
  ``chunks``, an FTS5 table over them (``content='chunks'``, ``tokenize='porter'``) and
  ``embeddings(model, folder_id, chunk_id, embedding BLOB)``; a search reads every embedding of
  the collection (batches of 2048) for an exact inner-product k-NN, runs BM25 (the whole query as a
  phrase, else its words minus stop words OR-ed), scores the BM25 hits missing from the k-NN, and
  fuses both by weighted reciprocal rank (k = 60; BM25's weight 0.9 for a phrase match, else 0.25 +
  0.5 / words²). Its C++ scan is emulated here with NumPy over the same rows.
* **MemDesk**: its own store (memdesk.core.memory.archival, the app's write path) and the dense leg
  of archival search (PassageRanker.vector_candidates).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np

K = 10
GPT4ALL_BATCH = 2048
RRF_K = 60
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they"
    " this to was will with".split()
)


def gpt4all_bm25_weight(query: str, phrase_matched: bool) -> float:
    """GPT4All's weight of the BM25 ranking in its fusion (database.cpp, computeBM25Weight)."""
    if phrase_matched:
        return 0.9
    words = query.split()
    meaningful = len([w for w in words if w.lower() not in STOP_WORDS])
    length_weight = min(1.0, max(0.0, 1.0 / meaningful**2)) if meaningful else 1.0
    return 0.25 + 0.5 * length_weight


def rrf_fuse(dense: list, lexical: list, bm25_weight: float, k: int = K) -> list:
    """GPT4All's fusion: the dense ranking extended by the lexical hits it lacks (``dense`` must
    already hold them, re-scored, at its end), stably sorted by weighted reciprocal rank."""
    lexical_rank = {item: i + 1 for i, item in enumerate(lexical)}
    dense_rank = {item: i + 1 for i, item in enumerate(dense)}
    missing_lexical, missing_dense = len(lexical) + 1, len(dense) + 1

    def score(item) -> float:
        return bm25_weight / (RRF_K + lexical_rank.get(item, missing_lexical)) + (1 - bm25_weight) / (
            RRF_K + dense_rank.get(item, missing_dense)
        )

    return sorted(dense, key=score, reverse=True)[:k]


def fts_queries(text: str) -> list[tuple[str, bool]]:
    """GPT4All's FTS5 queries in order: the whole input as a phrase, then its words without stop
    words OR-ed (each with whether it is the phrase)."""
    words = text.replace('"', '""').split()
    kept = [w for w in words if w.lower() not in STOP_WORDS]
    queries = [('"' + " ".join(words) + '"', True)]
    if kept:
        queries.append(("(" + " OR ".join(f'"{w}"' for w in kept) + ")", False))
    return queries


class MemDesk:
    name = "memdesk"

    def load(self) -> None:
        import bench.scale  # noqa: F401
        import memdesk.core.memory.archival  # noqa: F401
        import memdesk.core.retrieval  # noqa: F401
        import memdesk.core.storage  # noqa: F401

    def create(self, folder: Path) -> None:
        from bench.scale import GivenVectors
        from memdesk.core.base.clock import ManualClock
        from memdesk.core.memory.archival import ArchivalMemory
        from memdesk.core.memory.space import EmbeddingSpace
        from memdesk.core.retrieval import PassageRanker, VectorIndex
        from memdesk.core.storage import open_database

        self._db = open_database(folder / "memdesk.sqlite3")
        self._agent = self._db.execute(
            "INSERT INTO agents(name, created_at, system_prompt) VALUES ('bench', '2026-01-01T00:00:00+00:00', '')"
        ).lastrowid
        EmbeddingSpace(self._db, GivenVectors()).ensure()
        index = VectorIndex(self._db)
        self._ranker = PassageRanker(self._db, None, index)
        self._archival = ArchivalMemory(self._db, GivenVectors(), ManualClock(), ranker=self._ranker)

    def ingest(self, texts: list[str], vectors: np.ndarray) -> None:
        """A batch is a document's chunks, as the document ingestor stores them (one history entry
        for the document, not one a chunk)."""
        from datetime import UTC, datetime

        from memdesk.core.memory.archival import NewPassage

        when = datetime(2026, 1, 1, tzinfo=UTC)
        document = self._db.execute(
            "INSERT INTO documents(agent_id, path, title, content_hash, size_bytes, status, created_at, updated_at)"
            " VALUES (?, ?, 'bench', '', 0, 'ready', ?, ?)",
            (self._agent, f"/bench/{uuid.uuid4()}.txt", when.isoformat(), when.isoformat()),
        ).lastrowid
        self._archival.add(
            self._agent,
            [NewPassage(t, when, document_id=document, chunk_index=i) for i, t in enumerate(texts)],
            vectors,
        )

    def open(self, folder: Path) -> None:
        from bench.scale import GivenVectors
        from memdesk.core.base.clock import ManualClock
        from memdesk.core.memory.archival import ArchivalMemory
        from memdesk.core.retrieval import PassageRanker, VectorIndex
        from memdesk.core.storage import open_database

        self._db = open_database(folder / "memdesk.sqlite3")
        self._agent = 1
        self._ranker = PassageRanker(self._db, None, VectorIndex(self._db))
        self._archival = ArchivalMemory(self._db, GivenVectors(), ManualClock(), ranker=self._ranker)

    def search(self, vector: np.ndarray, text: str) -> list[int]:
        ids, _ = self._ranker.vector_candidates(self._agent, vector, K)
        return [int(i) - 1 for i in ids]  # passage ids are row numbers + 1

    def add(self, text: str, vector: np.ndarray) -> None:
        self.ingest([text], vector[None, :])

    def close(self) -> None:
        self._db.close()


class LanceDB:
    """AnythingLLM's engine."""

    name = "anythingllm_lancedb"
    TABLE = "workspace"

    def load(self) -> None:
        import lancedb  # noqa: F401

    def create(self, folder: Path) -> None:
        import lancedb

        self._db = lancedb.connect(str(folder / "lancedb"))
        self._table = None
        self._count = 0

    def _records(self, texts: list[str], vectors: np.ndarray, start: int) -> list[dict]:
        return [
            {"id": str(uuid.uuid4()), "row": start + i, "text": t, "vector": v.tolist()}
            for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
        ]

    def ingest(self, texts: list[str], vectors: np.ndarray) -> None:
        records = self._records(texts, vectors, self._count)
        self._count += len(texts)
        if self._table is None:
            self._table = self._db.create_table(self.TABLE, records)
        else:
            self._table.add(records)

    def open(self, folder: Path) -> None:
        import lancedb

        self._db = lancedb.connect(str(folder / "lancedb"))
        self._table = self._db.open_table(self.TABLE)
        self._count = self._table.count_rows()

    def search(self, vector: np.ndarray, text: str) -> list[int]:
        rows = self._table.search(vector).distance_type("cosine").limit(K).select(["row"]).to_list()
        return [int(r["row"]) for r in rows]

    def add(self, text: str, vector: np.ndarray) -> None:
        self._table.add(self._records([text], vector[None, :], self._count))
        self._count += 1

    def close(self) -> None:
        self._table = None


class Chroma:
    """Open WebUI's engine."""

    name = "openwebui_chroma"
    COLLECTION = "file-collection"

    def load(self) -> None:
        import chromadb  # noqa: F401
        import chromadb.utils.batch_utils  # noqa: F401

    def _client(self, folder: Path):
        import chromadb
        from chromadb import Settings

        return chromadb.PersistentClient(
            path=str(folder / "chroma"), settings=Settings(allow_reset=True, anonymized_telemetry=False)
        )

    def create(self, folder: Path) -> None:
        self._api = self._client(folder)
        self._collection = self._api.get_or_create_collection(name=self.COLLECTION, metadata={"hnsw:space": "cosine"})
        self._count = 0

    def ingest(self, texts: list[str], vectors: np.ndarray) -> None:
        from chromadb.utils.batch_utils import create_batches

        ids = [str(self._count + i) for i in range(len(texts))]
        self._count += len(texts)
        metadatas = [{"source": "bench"} for _ in texts]
        for batch in create_batches(
            api=self._api, ids=ids, embeddings=vectors.tolist(), documents=texts, metadatas=metadatas
        ):
            self._collection.add(*batch)

    def open(self, folder: Path) -> None:
        self._api = self._client(folder)
        self._collection = self._api.get_collection(name=self.COLLECTION)
        self._count = self._collection.count()

    def search(self, vector: np.ndarray, text: str) -> list[int]:
        result = self._collection.query(query_embeddings=[vector.tolist()], n_results=K)
        return [int(i) for i in result["ids"][0]]

    def add(self, text: str, vector: np.ndarray) -> None:
        self.ingest([text], vector[None, :])

    def close(self) -> None:
        self._collection = None


def _load_sqlite() -> None:
    import memdesk.core.storage.driver  # noqa: F401
    import memdesk.core.storage.vector_extension  # noqa: F401


def _sqlite(path: Path):
    """A SQLite connection with sqlite-vec loaded (the driver MemDesk uses: Python's own may lack
    extension loading)."""
    from memdesk.core.storage.driver import sqlite_module
    from memdesk.core.storage.vector_extension import load_vector_extension

    conn = sqlite_module().connect(str(path), isolation_level=None, check_same_thread=False)
    load_vector_extension(conn)
    return conn


class Jan:
    """Jan's engine: sqlite-vec's vec0, brute force."""

    name = "jan_sqlite_vec"

    def load(self) -> None:
        _load_sqlite()

    def create(self, folder: Path) -> None:
        self._conn = _sqlite(folder / "collection.db")
        c = self._conn
        c.execute(
            "CREATE TABLE files (id TEXT PRIMARY KEY, path TEXT UNIQUE NOT NULL, name TEXT, type TEXT,"
            " size INTEGER, chunk_count INTEGER DEFAULT 0)"
        )
        c.execute(
            "CREATE TABLE chunks (id TEXT PRIMARY KEY, text TEXT NOT NULL, embedding BLOB NOT NULL, file_id TEXT,"
            " chunk_file_order INTEGER, FOREIGN KEY (file_id) REFERENCES files(id))"
        )
        c.execute("CREATE INDEX idx_chunks_id ON chunks(id)")
        c.execute("CREATE INDEX idx_chunks_file_id ON chunks(file_id)")
        c.execute("CREATE INDEX idx_chunks_file_order ON chunks(file_id, chunk_file_order)")
        self._dim = 0
        self._files = 0

    def ingest(self, texts: list[str], vectors: np.ndarray) -> None:
        c = self._conn
        if not self._dim:
            self._dim = vectors.shape[1]
            c.execute(f"CREATE VIRTUAL TABLE chunks_vec USING vec0(embedding float[{self._dim}])")
        self._files += 1
        file_id = str(uuid.uuid4())
        c.execute("BEGIN")
        c.execute(
            "INSERT INTO files (id, path, name, chunk_count) VALUES (?, ?, ?, 0)", (file_id, f"/f/{self._files}", "f")
        )
        for order, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            chunk_id = str(uuid.uuid4())
            c.execute(
                "INSERT OR REPLACE INTO chunks (id, text, embedding, file_id, chunk_file_order) VALUES (?, ?, ?, ?, ?)",
                (chunk_id, text, vector.astype("<f4").tobytes(), file_id, order),
            )
            rowid = c.execute("SELECT rowid FROM chunks WHERE id = ?", (chunk_id,)).fetchone()[0]
            c.execute(
                "INSERT OR REPLACE INTO chunks_vec(rowid, embedding) VALUES (?, ?)",
                (rowid, json.dumps(vector.tolist())),
            )
        count = c.execute("SELECT COUNT(*) FROM chunks WHERE file_id = ?", (file_id,)).fetchone()[0]
        c.execute("UPDATE files SET chunk_count = ? WHERE id = ?", (count, file_id))
        c.execute("COMMIT")

    def open(self, folder: Path) -> None:
        self._conn = _sqlite(folder / "collection.db")
        self._files = self._conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
        self._dim = 1

    def search(self, vector: np.ndarray, text: str) -> list[int]:
        rows = self._conn.execute(
            "SELECT c.rowid, c.text, c.file_id, c.chunk_file_order, v.distance FROM chunks_vec v"
            " JOIN chunks c ON c.rowid = v.rowid WHERE v.embedding MATCH ? AND k = ? ORDER BY v.distance",
            (json.dumps(vector.tolist()), K),
        ).fetchall()
        return [int(r[0]) - 1 for r in rows]

    def add(self, text: str, vector: np.ndarray) -> None:
        self.ingest([text], vector[None, :])

    def close(self) -> None:
        self._conn.close()


class GPT4All:
    """GPT4All LocalDocs' recipe: FTS5 + float32 BLOBs, exact k-NN, reciprocal-rank fusion."""

    name = "gpt4all_localdocs"
    MODEL = "all-MiniLM-L6-v2"

    def load(self) -> None:
        _load_sqlite()

    def create(self, folder: Path) -> None:
        self._conn = c = _sqlite(folder / "localdocs_v3.db")
        c.execute("PRAGMA auto_vacuum = FULL")
        c.execute(
            "CREATE TABLE chunks(id INTEGER PRIMARY KEY AUTOINCREMENT, document_id INTEGER NOT NULL,"
            " chunk_text TEXT NOT NULL, file TEXT NOT NULL, title TEXT, author TEXT, subject TEXT, keywords TEXT,"
            " page INTEGER, line_from INTEGER, line_to INTEGER, words INTEGER DEFAULT 0 NOT NULL,"
            " tokens INTEGER DEFAULT 0 NOT NULL)"
        )
        c.execute(
            "CREATE VIRTUAL TABLE chunks_fts USING fts5(id UNINDEXED, document_id UNINDEXED, chunk_text, file,"
            " title, author, subject, keywords, content='chunks', content_rowid='id', tokenize='porter')"
        )
        c.execute(
            "CREATE TABLE embeddings(model TEXT NOT NULL, folder_id INTEGER NOT NULL, chunk_id INTEGER NOT NULL,"
            " embedding BLOB NOT NULL, PRIMARY KEY(model, folder_id, chunk_id), UNIQUE(model, chunk_id))"
        )
        self._documents = 0

    def ingest(self, texts: list[str], vectors: np.ndarray) -> None:
        c = self._conn
        self._documents += 1
        document = self._documents
        c.execute("BEGIN")
        ids = []
        for text in texts:
            chunk_id = c.execute(
                "INSERT INTO chunks(document_id, chunk_text, file, words) VALUES (?, ?, 'f', ?) RETURNING id",
                (document, text, len(text.split())),
            ).fetchone()[0]
            # chunks_fts is an external-content table: its own rowid follows the chunk's
            c.execute(
                "INSERT INTO chunks_fts(rowid, id, document_id, chunk_text, file) VALUES (?, ?, ?, ?, 'f')",
                (chunk_id, chunk_id, document, text),
            )
            ids.append(chunk_id)
        c.executemany(
            "INSERT INTO embeddings(model, folder_id, chunk_id, embedding) VALUES (?, 1, ?, ?)",
            [(self.MODEL, i, v.astype("<f4").tobytes()) for i, v in zip(ids, vectors, strict=True)],
        )
        c.execute("COMMIT")

    def open(self, folder: Path) -> None:
        self._conn = _sqlite(folder / "localdocs_v3.db")
        self._documents = self._conn.execute("SELECT COALESCE(MAX(document_id), 0) FROM chunks").fetchone()[0]

    def _knn(self, cursor, vector: np.ndarray, k: int) -> list[int]:
        best_ids: list[np.ndarray] = []
        best_scores: list[np.ndarray] = []
        while rows := cursor.fetchmany(GPT4ALL_BATCH):
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
            scores = matrix @ vector
            top = np.argpartition(-scores, min(k, len(rows)) - 1)[:k] if len(rows) > k else np.arange(len(rows))
            best_ids.append(ids[top])
            best_scores.append(scores[top])
        if not best_ids:
            return []
        ids, scores = np.concatenate(best_ids), np.concatenate(best_scores)
        order = np.argsort(-scores, kind="stable")[:k]
        return ids[order].tolist()

    def search(self, vector: np.ndarray, text: str) -> list[int]:
        c = self._conn
        dense = self._knn(
            c.execute("SELECT chunk_id, embedding FROM embeddings WHERE model = ?", (self.MODEL,)), vector, K
        )
        lexical, phrase = [], False
        for query, is_phrase in fts_queries(text):
            rows = c.execute(
                "SELECT id, bm25(chunks_fts) AS score FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY score LIMIT ?",
                (query, K),
            ).fetchall()
            if rows:
                lexical, phrase = [int(r[0]) for r in rows], is_phrase
                break
        missing = [i for i in lexical if i not in dense]
        if missing:
            marks = ",".join("?" * len(missing))
            dense = dense + self._knn(
                c.execute(f"SELECT chunk_id, embedding FROM embeddings WHERE chunk_id IN ({marks})", missing),
                vector,
                len(missing),
            )
        weight = gpt4all_bm25_weight(text, phrase) if lexical else 0.0
        return [i - 1 for i in rrf_fuse(dense, lexical, weight)]

    def add(self, text: str, vector: np.ndarray) -> None:
        self.ingest([text], vector[None, :])

    def close(self) -> None:
        self._conn.close()


ENGINES = {cls.name: cls for cls in (MemDesk, LanceDB, Chroma, Jan, GPT4All)}
