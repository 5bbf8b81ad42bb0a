"""How long a knowledge-graph catch-up keeps the store's other writers waiting.

    python -m bench.graph_lock --messages 400 --json       (the real MiniLM embedder and spaCy)
    python -m bench.graph_lock --quick --json               (the hashing embedder, 40 messages)

The extractor catches up on N user messages (bench.graph's texts) while another connection, as an
idle consolidation pass or a turn does, writes one row every 50 ms with the app's busy timeout.
``longest_write_lock_ms``: the longest transaction of the extractor (its write lock);
``other_writer_longest_wait_ms``: the longest a write of the other connection waited;
``share_of_busy_timeout``: that wait against the 5 s after which the other writer would fail with
"database is locked" (the goal: far below 1). ``catch_up_s`` is the extraction's wall time.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
import time

from bench.common import bench_parser
from bench.graph import agent_with_messages
from bench.report import emit

BUSY_TIMEOUT_S = 5.0  # open_database's default: what a pass or a turn tolerates


def run(count: int, *, real_embedder: bool) -> dict:
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import Paths
    from memdesk.core.embedding.hashing import HashingEmbedder
    from memdesk.core.graph.extraction import ExtractionOptions, GraphExtractor
    from memdesk.core.graph.nlp import SpacyAnalyser
    from memdesk.core.graph.store import KnowledgeGraph
    from memdesk.core.storage import open_database

    if real_embedder:
        from memdesk.core.embedding.minilm import MiniLMEmbedder

        embedder = MiniLMEmbedder()
        embedder.load()
    else:
        embedder = HashingEmbedder()
    services = open_services(Paths.from_environment(), embedder=embedder)
    try:
        record = agent_with_messages(services, "catch-up", count)
        db = services.db
        holds: list[float] = []
        original = db.transaction

        @contextlib.contextmanager
        def timed():
            if db.in_transaction:
                with original():
                    yield db
                return
            started = time.perf_counter()
            with original():
                yield db
            holds.append(time.perf_counter() - started)

        db.transaction = timed  # type: ignore[method-assign]
        analyser = SpacyAnalyser()
        analyser.analyse(["Warm up: Ann lives in Paris."])
        extractor = GraphExtractor(
            KnowledgeGraph(db, services.clock, embedder), analyser, services.clock, ExtractionOptions(model_facts=False)
        )
        waits: list[float] = []
        done = threading.Event()

        def other_writer() -> None:
            other = open_database(services.paths.database, busy_timeout=BUSY_TIMEOUT_S)
            try:
                other.execute("CREATE TABLE IF NOT EXISTS bench_other_writer (at REAL)")
                while not done.wait(0.05):
                    started = time.perf_counter()
                    with other.transaction():
                        other.execute("INSERT INTO bench_other_writer(at) VALUES (?)", (started,))
                    waits.append(time.perf_counter() - started)
            finally:
                other.close()

        writer = threading.Thread(target=other_writer, name="other-writer")
        writer.start()
        started = time.perf_counter()
        try:
            extractor.enqueue(record.id)
            report = extractor.run_entities(record.id)
        finally:
            done.set()
            writer.join()
        seconds = time.perf_counter() - started
        holds.sort()
        longest_wait = max(waits, default=0.0)
        return {
            "messages": report.sources,
            "embedder": embedder.model_id,
            "transactions": len(holds),
            "longest_write_lock_ms": round(holds[-1] * 1000, 1),
            "write_lock_p95_ms": round(holds[int(0.95 * (len(holds) - 1))] * 1000, 1),
            "other_writer_writes": len(waits),
            "other_writer_longest_wait_ms": round(longest_wait * 1000, 1),
            "share_of_busy_timeout": round(longest_wait / BUSY_TIMEOUT_S, 4),
            "catch_up_s": round(seconds, 2),
        }
    finally:
        services.close()


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--quick", action="store_true", help="40 messages with the hashing embedder")
    args = parser.parse_args(argv)
    os.environ.setdefault("MEMDESK_HOME", tempfile.mkdtemp(prefix="memdesk-bench-graph-lock-"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = {"benchmark": "graph_lock", **run(40 if args.quick else args.messages, real_embedder=not args.quick)}
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
