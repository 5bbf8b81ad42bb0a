"""In-memory copies of one agent's vectors, kept in sync with their vec0 table.

The vec0 tables stay the durable store; searching them directly means a float32 scan in SQLite
that measures about five times slower than a NumPy matrix product. So each (table, agent) is loaded
once into memory (a ``VectorIndex`` per store) and searched there, and reloaded when the
``vector_generation`` counter that the m002 triggers bump has moved (one primary-key lookup per
query, works across connections). Memory owns the tables (desktop.core.memory.space); this only reads.

Large indexes (``QUANTIZE_MIN`` vectors and up) are searched in two steps: an int8 matrix product
through PyTorch's fbgemm kernels (a quarter of the memory traffic of float32) proposes a short list,
and exact float32 cosine re-scores it. Without those kernels the exact product is used.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass, field

import numpy as np

from desktop.core.storage import Database

#: Below this many vectors the exact product is already as fast as anything cleverer.
QUANTIZE_MIN = 20_000
#: Short-list size per requested result for the int8 step (re-scored exactly).
SHORTLIST_FACTOR = 10
SHORTLIST_MIN = 200

#: Each memory kind and the vec0 table holding its vectors (rowid = the row's id).
TABLES = {"passages": "passages_vec", "messages": "messages_vec"}


@dataclass
class _Loaded:
    generation: int
    ids: np.ndarray
    matrix: np.ndarray  # (n, d) float32, rows unit length
    packed: object | None = None  # fbgemm-packed int8 weights
    lock: threading.Lock = field(default_factory=threading.Lock)


def table_exists(db: Database, table: str) -> bool:
    return bool(db.scalar("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)))


def _load(db: Database, kind: str, agent_id: int, gen: int) -> _Loaded:
    table = TABLES[kind]
    rows = db.query(f"SELECT rowid, embedding FROM {table} WHERE agent_id = ?", (agent_id,)) if table_exists(db, table) else []
    if not rows:
        return _Loaded(gen, np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32))
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1).copy()
    loaded = _Loaded(gen, ids, matrix)
    if len(rows) >= QUANTIZE_MIN:
        loaded.packed = _pack_int8(matrix)
    return loaded


def _pack_int8(matrix: np.ndarray):
    try:
        import torch

        if "fbgemm" not in torch.backends.quantized.supported_engines and "x86" not in torch.backends.quantized.supported_engines:
            return None
        scales = np.maximum(np.abs(matrix).max(axis=1), 1e-12) / 127.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            weights = torch.quantize_per_channel(
                torch.from_numpy(matrix), torch.from_numpy(scales.astype(np.float64)), torch.zeros(len(matrix), dtype=torch.int64), 0, torch.qint8
            )
            return torch.ops.quantized.linear_prepack(weights, None)
    except Exception:  # an exotic torch build without quantized kernels: exact search still works
        return None


class VectorIndex:
    """The in-memory vector copies of one store, one per (kind, agent), reloaded when the store's
    ``vector_generation`` moved. One object per store, built by the composition root and shared by
    the store's rankers: a cache that belongs to an object cannot answer for another store."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._loaded: dict[tuple[str, int], _Loaded] = {}
        self._lock = threading.Lock()

    def generation(self, kind: str, agent_id: int) -> int:
        value = self._db.scalar("SELECT gen FROM vector_generation WHERE kind = ? AND agent_id = ?", (kind, agent_id))
        return int(value or 0)

    def loaded(self, kind: str, agent_id: int) -> _Loaded:
        gen = self.generation(kind, agent_id)
        with self._lock:
            current = self._loaded.get((kind, agent_id))
        if current is not None and current.generation == gen:
            return current
        fresh = _load(self._db, kind, agent_id, gen)
        with self._lock:
            self._loaded[(kind, agent_id)] = fresh
        return fresh

    def top_k(self, kind: str, agent_id: int, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return top_k(self.loaded(kind, agent_id), query, k)

    def all_scores(self, kind: str, agent_id: int, query: np.ndarray) -> dict[int, float]:
        return all_scores(self.loaded(kind, agent_id), query)


def _int8_scores(packed, query: np.ndarray) -> np.ndarray:
    import torch

    with torch.no_grad():
        return torch.ops.quantized.linear_dynamic(torch.from_numpy(query[None, :]), packed)[0].numpy()


def top_k(index: _Loaded, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest rows by cosine: (ids, similarities), best first."""
    n = len(index.ids)
    if n == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    query = np.ascontiguousarray(query, dtype=np.float32)
    if index.packed is not None:
        shortlist = min(n, max(SHORTLIST_MIN, SHORTLIST_FACTOR * k))
        approx = _int8_scores(index.packed, query)
        candidates = np.argpartition(-approx, shortlist - 1)[:shortlist] if shortlist < n else np.arange(n)
        scores = index.matrix[candidates] @ query
    else:
        candidates = None
        scores = index.matrix @ query
    k = min(k, len(scores))
    best = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
    best = best[np.argsort(-scores[best], kind="stable")]
    rows = best if candidates is None else candidates[best]
    return index.ids[rows], scores[best]


def all_scores(index: _Loaded, query: np.ndarray) -> dict[int, float]:
    """Cosine of every vector (small indexes: recall memory of one agent)."""
    if len(index.ids) == 0:
        return {}
    scores = index.matrix @ np.asarray(query, dtype=np.float32)
    return dict(zip(index.ids.tolist(), scores.tolist()))
