"""Archival vector search latency vs a NumPy float32 matrix product over the same vectors.

    python -m bench.search --n 100000 --json

Random unit vectors (dimension 384) are stored as passages in a real MemDesk store; the timed call is
the dense leg archival_memory_search uses (PassageRanker.vector_candidates), the
baseline an exact ``X @ q`` top-k. Queries alternate between the two so load on the machine hits both.
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.common import bench_parser
from bench.report import emit
from memdesk.app.services import default_embedder
from memdesk.core.base.clock import ManualClock
from memdesk.core.memory.archival import ArchivalMemory, NewPassage
from memdesk.core.retrieval import PassageRanker
from memdesk.core.storage import open_database

WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def _fill(archival: ArchivalMemory, db, vectors: np.ndarray) -> int:
    """Passage ids 1..n in the order of ``vectors`` (a fresh store). The embedder only names the
    vectors' model: it is never loaded."""
    agent_id = db.execute(
        "INSERT INTO agents(name, created_at, system_prompt) VALUES ('bench', '2026-01-01T00:00:00+00:00', '')"
    ).lastrowid
    with db.transaction():
        for start in range(0, len(vectors), 10_000):
            block = vectors[start : start + 10_000]
            archival.add(agent_id, [NewPassage(f"passage {start + i + 1}", WHEN) for i in range(len(block))], block)
    return agent_id


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((args.n, args.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = rng.standard_normal((args.queries, args.dim)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    with tempfile.TemporaryDirectory(prefix="memdesk-bench-") as folder:
        db = open_database(Path(folder) / "memdesk.sqlite3")
        started = time.perf_counter()
        ranker = PassageRanker(db, None)
        agent_id = _fill(ArchivalMemory(db, default_embedder(), ManualClock(), ranker=ranker), db, vectors)
        fill_s = time.perf_counter() - started
        # Rows come back from the store in rowid order, so row i of `vectors` is passage id i + 1.
        matrix = vectors
        started = time.perf_counter()
        ranker.vector_candidates(agent_id, queries[0], args.k)  # loads and quantizes the in-memory index
        load_s = time.perf_counter() - started
        ours, baseline, recalls = [], [], []
        for query in queries:
            t0 = time.perf_counter()
            ids, _ = ranker.vector_candidates(agent_id, query, args.k)
            t1 = time.perf_counter()
            scores = matrix @ query
            top = np.argpartition(-scores, args.k)[: args.k]
            top = top[np.argsort(-scores[top])]
            t2 = time.perf_counter()
            ours.append(t1 - t0)
            baseline.append(t2 - t1)
            recalls.append(len(set(ids.tolist()) & set((top + 1).tolist())) / args.k)
        db.close()
    result = {
        "n": args.n,
        "dim": args.dim,
        "queries": args.queries,
        "memdesk_p50_ms": round(float(np.percentile(ours, 50)) * 1e3, 3),
        "memdesk_p95_ms": round(float(np.percentile(ours, 95)) * 1e3, 3),
        "numpy_p50_ms": round(float(np.percentile(baseline, 50)) * 1e3, 3),
        "numpy_p95_ms": round(float(np.percentile(baseline, 95)) * 1e3, 3),
        "ratio": round(float(np.percentile(ours, 50) / np.percentile(baseline, 50)), 3),
        "recall_at_10": round(float(np.mean(recalls)), 4),
        "store_fill_s": round(fill_s, 1),
        "index_load_s": round(load_s, 2),
    }
    emit(result, args.json)


if __name__ == "__main__":
    main()
