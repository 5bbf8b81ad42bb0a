"""Vector index candidates on clustered synthetic vectors: search p50, write cost, open time,
memory and recall@10 against the exact NumPy product (the figures behind memdesk.core.retrieval's
choice; see the README's Benchmarks).

    python -m bench.vector_candidates --n 100000 --json
"""

from __future__ import annotations

import json
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import bench_parser
from memdesk.core.storage.driver import sqlite_module

K = 10


def clustered(rng: np.random.Generator, n: int, dim: int, spread: float = 0.35) -> np.ndarray:
    """Unit vectors drawn around random topic centres, like embeddings of a person's notes (uniform
    noise makes every index look better or worse than it is)."""
    clusters = max(10, n // 100)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        block = (
            centres[rng.integers(0, clusters, m)]
            + spread * rng.standard_normal((m, dim)).astype(np.float32) / np.sqrt(dim) * 3
        )
        out[start : start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def _exact(matrix, q, k=K):
    s = matrix @ q
    top = np.argpartition(-s, k)[:k]
    return top[np.argsort(-s[top])]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(fn, queries):
    times, results = [], []
    for q in queries:
        t0 = time.perf_counter()
        results.append(fn(q))
        times.append(time.perf_counter() - t0)
    return float(np.percentile(times, 50) * 1e3), results


def _recall(results, truth):
    return float(np.mean([len(set(map(int, r)) & set(map(int, t))) / K for r, t in zip(results, truth, strict=True)]))


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--only", default="numpy,binary,sqlite_vec_bit,usearch,faiss")
    args = parser.parse_args()
    rng = np.random.default_rng(3)
    data = clustered(rng, args.n + args.queries, args.dim)
    vectors, queries = data[: args.n], data[args.n :]
    truth = [_exact(vectors, q) for q in queries]
    out: dict = {"n": args.n, "dim": args.dim}
    only = args.only.split(",")
    if "numpy" in only:
        p50, _ = _timed(lambda q: _exact(vectors, q), queries)
        out["numpy_exact"] = {"search_p50_ms": round(p50, 2), "memory_mb": round(vectors.nbytes / 2**20)}
    if "binary" in only:
        t0 = time.perf_counter()
        codes = np.packbits(vectors > 0, axis=1).view(np.uint64)
        build = time.perf_counter() - t0
        for shortlist in (200, 1000):

            def search(q, shortlist=shortlist):
                qc = np.packbits(q > 0).view(np.uint64)
                d = np.bitwise_count(codes ^ qc).sum(axis=1, dtype=np.int32)
                cand = np.argpartition(d, shortlist)[:shortlist]
                s = vectors[cand] @ q  # re-scored exactly (in MemDesk: the shortlist's floats from the store)
                return cand[np.argsort(-s)[:K]]

            p50, res = _timed(search, queries)
            out[f"binary_rescore_{shortlist}"] = {
                "search_p50_ms": round(p50, 2),
                "recall_at_10": round(_recall(res, truth), 3),
                "memory_mb": round(codes.nbytes / 2**20, 1),
                "build_s": round(build, 2),
            }
    if "sqlite_vec_bit" in only:
        import sqlite_vec

        with tempfile.TemporaryDirectory() as folder:
            con = sqlite_module().connect(Path(folder) / "v.db")
            con.enable_load_extension(True)
            sqlite_vec.load(con)
            con.execute(
                "CREATE VIRTUAL TABLE v USING vec0(agent_id integer partition key,"
                f" embedding float[{args.dim}] distance_metric=cosine,"
                f" coarse bit[{args.dim}])"
            )
            t0 = time.perf_counter()
            con.executemany(
                "INSERT INTO v(rowid, agent_id, embedding, coarse) VALUES (?, 1, ?, vec_quantize_binary(?))",
                ((i, vectors[i].tobytes(), vectors[i].tobytes()) for i in range(args.n)),
            )
            con.commit()
            insert_s = time.perf_counter() - t0
            one = vectors[0].tobytes()
            t0 = time.perf_counter()
            for i in range(100):
                con.execute(
                    "INSERT INTO v(rowid, agent_id, embedding, coarse) VALUES (?, 1, ?, vec_quantize_binary(?))",
                    (args.n + 10 + i, one, one),
                )
                con.commit()
            write_ms = (time.perf_counter() - t0) * 10
            con.execute("DELETE FROM v WHERE rowid >= ?", (args.n,))
            con.commit()

            def search(q, shortlist=1000):
                b = q.tobytes()
                rows = con.execute(
                    "WITH c AS (SELECT rowid FROM v WHERE coarse MATCH vec_quantize_binary(?) AND k = ?"
                    " AND agent_id = 1)"
                    " SELECT v.rowid FROM v JOIN c ON c.rowid = v.rowid ORDER BY vec_distance_cosine(v.embedding, ?)"
                    " LIMIT ?",
                    (b, shortlist, b, K),
                ).fetchall()
                return [r[0] for r in rows]

            p50, res = _timed(search, queries)
            out["sqlite_vec_bit_rescore_1000"] = {
                "search_p50_ms": round(p50, 2),
                "recall_at_10": round(_recall(res, truth), 3),
                "write_ms": round(write_ms, 2),
                "bulk_insert_s": round(insert_s, 1),
                "memory_mb": 0,
            }

            def exact_sql(q):
                return [
                    r[0]
                    for r in con.execute(
                        "SELECT rowid FROM v WHERE embedding MATCH ? AND k = ? AND agent_id = 1", (q.tobytes(), K)
                    )
                ]

            p50, res = _timed(exact_sql, queries[:10])
            out["sqlite_vec_float_knn"] = {
                "search_p50_ms": round(p50, 2),
                "recall_at_10": round(_recall(res, truth[:10]), 3),
            }
            con.close()
    if "usearch" in only:
        from usearch.index import Index

        for dtype in ("i8", "f16"):
            index = Index(ndim=args.dim, metric="cos", dtype=dtype)
            t0 = time.perf_counter()
            index.add(np.arange(args.n), vectors, threads=2)
            build = time.perf_counter() - t0
            t0 = time.perf_counter()
            for i in range(100):
                index.add(np.array([args.n + 10 + i]), vectors[i : i + 1])
            write_ms = (time.perf_counter() - t0) * 10
            p50, res = _timed(lambda q, index=index: index.search(q, K).keys, queries)
            with tempfile.TemporaryDirectory() as folder:
                path = str(Path(folder) / "u.usearch")
                index.save(path)
                size = Path(path).stat().st_size
                t0 = time.perf_counter()
                Index.restore(path, view=True)
                view_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                Index.restore(path)
                load_s = time.perf_counter() - t0
            out[f"usearch_hnsw_{dtype}"] = {
                "search_p50_ms": round(p50, 2),
                "recall_at_10": round(_recall(res, truth), 3),
                "build_s": round(build, 1),
                "write_ms": round(write_ms, 2),
                "file_mb": round(size / 2**20),
                "open_view_s": round(view_s, 3),
                "open_load_s": round(load_s, 2),
            }
            del index
    if "faiss" in only:
        import faiss

        faiss.omp_set_num_threads(2)
        for name, factory in (("faiss_hnsw32_sq8", "HNSW32,SQ8"), ("faiss_ivf1024_sq8", "IVF1024,SQ8")):
            index = faiss.index_factory(args.dim, factory, faiss.METRIC_INNER_PRODUCT)
            t0 = time.perf_counter()
            index.train(vectors[: min(args.n, 100_000)])
            index.add(vectors)
            build = time.perf_counter() - t0
            if "IVF" in factory:
                index.nprobe = 16
            t0 = time.perf_counter()
            for i in range(100):
                index.add(vectors[i : i + 1])
            write_ms = (time.perf_counter() - t0) * 10
            p50, res = _timed(lambda q, index=index: index.search(q[None, :], K)[1][0], queries)
            out[name] = {
                "search_p50_ms": round(p50, 2),
                "recall_at_10": round(_recall(res, truth), 3),
                "build_s": round(build, 1),
                "write_ms": round(write_ms, 2),
            }
            del index
    out["peak_rss_mb"] = round(_rss_mb())
    print(json.dumps(out) if args.json else json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
