"""The dense leg on real embeddings: recall@10 against exact search and search time, on MiniLM
vectors of real text (LoCoMo turns, BEAM messages: bench/realtext.py) grown to ``--n`` rows by
repeating them with small noise, the questions of the same data sets as queries; and the same on
uniform random unit vectors, the case sign bits find hardest.

    python -m bench.dense_recall --locomo ../shared/data/locomo/locomo_dev.json \\
        --beam BEAM/chats/100K/1 ... --n 100000 1000000 --json

The timed call is what archival search runs (VectorIndex.top_k, k = 10) in a real store; the
baseline is NumPy's exact product over the same float32 matrix in memory, queries interleaved so
that load on the machine falls on both.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import realtext
from bench.common import bench_parser
from memdesk.core.retrieval import VectorIndex, vector_codes
from memdesk.core.storage import open_database

K = 10
FILL_BLOCK = 20_000


def fill(path: Path, vectors: np.ndarray) -> None:
    """A store whose passages 1..n have these vectors in their search form (the sign-bit blocks
    and float16 copies the index reads; vec0 is not needed for searching)."""
    from bench.scale import GivenVectors
    from memdesk.core.memory.space import EmbeddingSpace

    db = open_database(path)
    agent = db.execute(
        "INSERT INTO agents(name, created_at, system_prompt) VALUES ('bench', '2026-01-01T00:00:00+00:00', '')"
    ).lastrowid
    EmbeddingSpace(db, GivenVectors()).ensure()
    for start in range(0, len(vectors), FILL_BLOCK):
        block = np.asarray(vectors[start : start + FILL_BLOCK], dtype=np.float32)
        ids = list(range(start + 1, start + len(block) + 1))
        with db.transaction():
            db.executemany(
                "INSERT INTO passages(id, agent_id, text, created_at, tags, embedded)"
                " VALUES (?, ?, '', '2026-01-01T00:00:00+00:00', '[]', 1)",
                [(i, agent) for i in ids],
            )
            vector_codes.write(db, "passages", agent, ids, block)
    db.close()


def exact_top(matrix: np.ndarray, query: np.ndarray, k: int = K) -> np.ndarray:
    scores = matrix @ query
    top = np.argpartition(-scores, k)[:k]
    return top[np.argsort(-scores[top])]


def measure(vectors: np.ndarray, queries: np.ndarray, folder: Path) -> dict:
    path = folder / f"dense-{len(vectors)}.sqlite3"
    fill(path, vectors)
    db = open_database(path)
    index = VectorIndex(db)
    started = time.perf_counter()
    index.top_k("passages", 1, queries[0], K)
    open_s = time.perf_counter() - started
    ours, baseline, recalls = [], [], []
    for query in queries:
        t0 = time.perf_counter()
        ids, _ = index.top_k("passages", 1, query, K)
        t1 = time.perf_counter()
        truth = exact_top(vectors, query) + 1
        t2 = time.perf_counter()
        ours.append(t1 - t0)
        baseline.append(t2 - t1)
        recalls.append(len(set(ids.tolist()) & set(truth.tolist())) / K)
    db.close()
    path.unlink()
    ms = lambda values, p: round(float(np.percentile(values, p)) * 1e3, 3)  # noqa: E731
    return {
        "recall_at_10_vs_exact": round(float(np.mean(recalls)), 4),
        "recall_at_10_min": round(float(np.min(recalls)), 2),
        "search_p50_ms": ms(ours, 50),
        "search_p95_ms": ms(ours, 95),
        "numpy_p50_ms": ms(baseline, 50),
        "search_p50_vs_numpy": round(float(np.percentile(ours, 50) / np.percentile(baseline, 50)), 3),
        "open_to_first_search_s": round(open_s, 3),
    }


def uniform(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        block = rng.standard_normal((min(100_000, n - start), dim)).astype(np.float32)
        out[start : start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def run(base: np.ndarray, questions: np.ndarray, sizes: list[int], queries: int, workdir: Path | None = None) -> dict:
    rng = np.random.default_rng(11)
    picked = questions[rng.choice(len(questions), min(queries, len(questions)), replace=False)]
    result: dict = {"texts": len(base), "queries": len(picked), "k": K, "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="memdesk-dense-", dir=workdir) as folder:
        for n in sizes:
            real = realtext.grow(base, n)
            random_vectors = uniform(n, base.shape[1], seed=n)
            random_queries = uniform(len(picked), base.shape[1], seed=n + 1)
            result["sizes"][str(n)] = {
                "real_text": measure(real, picked, Path(folder)),
                "uniform_random": measure(random_vectors, random_queries, Path(folder)),
            }
            del real, random_vectors
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    result["cpus"] = os.cpu_count()
    return result


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--locomo", type=Path, help="LoCoMo's JSON (locomo_dev.json)")
    parser.add_argument("--beam", type=Path, nargs="*", default=[], help="BEAM chat folders (chats/100K/N)")
    parser.add_argument("--n", type=int, nargs="+", default=[100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdesk-bench-vectors", help="vector cache"
    )
    args = parser.parse_args()
    if args.locomo is None and not args.beam:
        parser.error("give --locomo and/or --beam")
    corpus = realtext.load(args.locomo, args.beam)
    base = realtext.embed_cached(corpus.texts, args.cache)
    questions = realtext.embed_cached(corpus.questions, args.cache)
    result = run(base, questions, args.n, args.queries)
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
