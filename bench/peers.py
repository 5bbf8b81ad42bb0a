"""MemDesk beside the engines its users' other apps run on, on the same passages and the same
precomputed vectors, in one run: AnythingLLM's LanceDB, Open WebUI's Chroma, Jan's sqlite-vec and
GPT4All's SQLite recipe (bench/peer_engines.py says how each app configures its engine, and where).

    python -m bench.peers --n 100000 --json

The passages and vectors are bench.scale's (clustered synthetic 384-d vectors, text whose words
follow its topic). Each engine runs in processes of its own, one engine after another: one process
stores the rows in batches (``BATCH`` rows a call or transaction, a folder of documents), then a
fresh one opens the store and searches. Figures per engine: ingest rows/s, search p50/p95 (k = 10),
search right after one write (both also as the process's CPU time per search, p50, which the load of
a shared machine distorts far less than the wall clock), open to first search (the engine's
libraries imported before, and timed apart as ``import_s``), resident memory (what the process grew
by from opening the store to the end of the searches), disk per 100,000 rows and recall@10 against
the exact product. A search is what each app runs per question with its engine: the vector search
for MemDesk (archival search's dense leg), AnythingLLM, Open WebUI and Jan; GPT4All's whole recipe,
whose BM25 and fusion are part of every search it makes. ``ratios_vs_best_peer`` gives, per figure,
MemDesk's advantage over the best peer on it: above 1 means MemDesk is better (the peer's time over
MemDesk's; MemDesk's throughput over the peer's).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import bench_parser
from bench.peer_engines import ENGINES, K

BATCH = 1000
#: Rows the exact truth is computed over at once (a million rows by 384 in float32 is 1.5 GB).
_TRUTH_BLOCK = 100_000
#: Figures where less is better (times, memory, disk); the others (throughput, recall) more.
LOWER_IS_BETTER = (
    "search_p50_ms",
    "search_p95_ms",
    "search_after_write_p50_ms",
    "search_cpu_p50_ms",
    "search_after_write_cpu_p50_ms",
    "open_to_first_search_s",
    "resident_mb",
    "disk_mb_per_100k",
)
HIGHER_IS_BETTER = ("ingest_rows_per_s", "recall_at_10")


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def make_data(folder: Path, n: int, queries: int, seed: int = 7) -> None:
    """The rows, the queries and their exact top 10 (row numbers), written once for every engine."""
    from bench.scale import Corpus

    corpus = Corpus(seed, topics=max(10, n // 100))
    vectors = np.lib.format.open_memmap(folder / "vectors.npy", mode="w+", dtype=np.float32, shape=(n, 384))
    texts: list[str] = []
    for start in range(0, n, 20_000):
        m = min(20_000, n - start)
        block, topics = corpus.vectors(m)
        vectors[start : start + m] = block
        texts.extend(corpus.texts(topics))
    vectors.flush()
    probe, topics = corpus.vectors(queries)
    written, written_topics = corpus.vectors(queries)
    # A query's words are its topic's, as a person's question names what the note was about.
    query_texts = [f"t{t}x{q % 20} w{200 + q}" for q, t in enumerate(topics.tolist())]
    np.save(folder / "queries.npy", probe)
    np.save(folder / "written.npy", written)
    (folder / "texts.json").write_text(json.dumps(texts))
    (folder / "query_texts.json").write_text(json.dumps(query_texts))
    (folder / "written_texts.json").write_text(json.dumps(corpus.texts(written_topics)))
    best = np.full((queries, K), -1, dtype=np.int64)
    best_scores = np.full((queries, K), -np.inf, dtype=np.float32)
    for start in range(0, n, _TRUTH_BLOCK):
        scores = probe @ vectors[start : start + _TRUTH_BLOCK].T
        merged = np.concatenate([best_scores, scores], axis=1)
        ids = np.concatenate([best, np.arange(start, start + scores.shape[1])[None, :].repeat(queries, 0)], axis=1)
        top = np.argsort(-merged, axis=1, kind="stable")[:, :K]
        best, best_scores = np.take_along_axis(ids, top, 1), np.take_along_axis(merged, top, 1)
    np.save(folder / "truth.npy", best)


def _folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def child_ingest(engine_name: str, data: Path, store: Path) -> dict:
    engine = ENGINES[engine_name]()
    engine.load()
    vectors = np.load(data / "vectors.npy", mmap_mode="r")
    texts = json.loads((data / "texts.json").read_text())
    store.mkdir(parents=True, exist_ok=True)
    engine.create(store)
    started = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        engine.ingest(texts[start : start + BATCH], np.asarray(vectors[start : start + BATCH]))
    spent = time.perf_counter() - started
    engine.close()
    return {"ingest_rows_per_s": round(len(texts) / spent, 1), "ingest_s": round(spent, 2)}


def child_search(engine_name: str, data: Path, store: Path) -> dict:
    engine = ENGINES[engine_name]()
    queries = np.load(data / "queries.npy")
    written = np.load(data / "written.npy")
    query_texts = json.loads((data / "query_texts.json").read_text())
    written_texts = json.loads((data / "written_texts.json").read_text())
    truth = np.load(data / "truth.npy")
    # The engine's libraries are imported first and timed apart: opening is what a running app
    # does each time it starts a search session, importing what its start-up does once.
    started = time.perf_counter()
    engine.load()
    import_s = time.perf_counter() - started
    rss_before = _rss_mb()
    started = time.perf_counter()
    engine.open(store)
    engine.search(queries[0], query_texts[0])
    open_s = time.perf_counter() - started
    # Wall-clock time, and the CPU time of the whole process (every thread an engine runs): on a
    # shared machine the wall clock follows the load, CPU time far less.
    times, cpu, recalls = [], [], []
    for q, (vector, text) in enumerate(zip(queries, query_texts, strict=True)):
        t0, c0 = time.perf_counter(), time.process_time()
        found = engine.search(vector, text)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        recalls.append(len(set(found) & set(truth[q].tolist())) / K)
    resident = _rss_mb() - rss_before
    after_write, after_write_cpu = [], []
    for q, (vector, text) in enumerate(zip(written, written_texts, strict=True)):
        engine.add(text, vector)
        t0, c0 = time.perf_counter(), time.process_time()
        engine.search(queries[q], query_texts[q])
        after_write.append(time.perf_counter() - t0)
        after_write_cpu.append(time.process_time() - c0)
    engine.close()
    ms = lambda values, p: round(float(np.percentile(values, p)) * 1e3, 3)  # noqa: E731
    return {
        "search_p50_ms": ms(times, 50),
        "search_p95_ms": ms(times, 95),
        "search_after_write_p50_ms": ms(after_write, 50),
        "search_cpu_p50_ms": ms(cpu, 50),
        "search_after_write_cpu_p50_ms": ms(after_write_cpu, 50),
        "open_to_first_search_s": round(open_s, 3),
        "import_s": round(import_s, 3),
        "resident_mb": round(resident, 1),
        "process_rss_mb": round(_rss_mb(), 1),
        "recall_at_10": round(float(np.mean(recalls)), 4),
    }


def _run_child(step: str, engine: str, data: Path, store: Path) -> dict:
    """``step`` of ``engine`` in a fresh Python process; its last line of output is its JSON."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.peers",
            "--child",
            step,
            "--engine",
            engine,
            "--data",
            str(data),
            "--store",
            str(store),
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"{engine} {step} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def ratios(engines: dict[str, dict]) -> dict[str, float | None]:
    """MemDesk's advantage over the best peer on each figure, above 1 when MemDesk is better."""
    ours = engines.get("memdesk", {})
    peers = [figures for name, figures in engines.items() if name != "memdesk"]
    out: dict[str, float | None] = {}
    for key in LOWER_IS_BETTER + HIGHER_IS_BETTER:
        values = [p[key] for p in peers if p.get(key) is not None]
        if key not in ours or not values:
            continue
        if key in LOWER_IS_BETTER:
            best = min(values)
            out[key] = round(best / ours[key], 3) if ours[key] > 0 else None
        else:
            best = max(values)
            out[key] = round(ours[key] / best, 3) if best > 0 else None
    return out


def run(n: int, queries: int, engines: list[str], workdir: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="memdesk-peers-", dir=workdir) as folder:
        folder = Path(folder)
        data = folder / "data"
        data.mkdir()
        make_data(data, n, queries)
        results: dict[str, dict] = {}
        for name in engines:
            store = folder / name
            figures = _run_child("ingest", name, data, store)
            figures["disk_mb_per_100k"] = round(_folder_mb(store) / n * 100_000, 2)
            figures.update(_run_child("search", name, data, store))
            results[name] = figures
            # each engine's figures as soon as they are known: a long run stopped early keeps them
            print(json.dumps({"engine": name, **figures}), file=sys.stderr, flush=True)
            shutil.rmtree(store)  # a million rows take gigabytes in each engine: one at a time on disk
    return {
        "n": n,
        "dim": 384,
        "queries": queries,
        "k": K,
        "engines": results,
        "ratios_vs_best_peer": ratios(results),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated, of: " + ", ".join(ENGINES))
    parser.add_argument("--workdir", type=Path, default=None, help="where the stores are made (a temporary folder)")
    parser.add_argument("--child", choices=("ingest", "search"), help=argparse_hidden())
    parser.add_argument("--engine", help=argparse_hidden())
    parser.add_argument("--data", type=Path, help=argparse_hidden())
    parser.add_argument("--store", type=Path, help=argparse_hidden())
    args = parser.parse_args()
    if args.child:
        step = child_ingest if args.child == "ingest" else child_search
        print(json.dumps(step(args.engine, args.data, args.store)))
        return
    engines = [e for e in args.engines.split(",") if e]
    unknown = sorted(set(engines) - set(ENGINES))
    if unknown:
        parser.error(f"unknown engines: {', '.join(unknown)}")
    result = run(args.n, args.queries, engines, args.workdir)
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
