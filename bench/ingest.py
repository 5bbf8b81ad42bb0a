"""Ingestion throughput: chunks per second through the whole pipeline vs the embedder alone.

    python -m bench.ingest --json

A ~5 MB corpus of generated prose (Markdown, text and HTML files) goes through Ingestor.ingest
(discover, parse, chunk, store, FTS, embed, store vectors) with the real MiniLM embedder; then the
same chunk texts are embedded again with nothing else around them, in the same batch size.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

from bench.common import bench_parser, sentence
from bench.report import emit
from memdesk.app.services import default_embedder
from memdesk.core.base.clock import SystemClock
from memdesk.core.documents.ingest import EMBED_BATCH, Ingestor
from memdesk.core.memory.archival import ArchivalMemory
from memdesk.core.storage import open_database


def make_corpus(folder: Path, megabytes: float, seed: int = 3) -> int:
    rng = random.Random(seed)
    target = int(megabytes * 1024 * 1024)
    written = 0
    number = 0
    while written < target:
        paragraphs = [" ".join(sentence(rng) for _ in range(rng.randint(3, 8))) for _ in range(rng.randint(20, 60))]
        kind = number % 3
        if kind == 0:
            text = f"# Report {number}\n\n" + "\n\n".join(paragraphs)
            name = f"report-{number}.md"
        elif kind == 1:
            text = "\n\n".join(paragraphs)
            name = f"notes-{number}.txt"
        else:
            text = (
                f"<html><head><title>Page {number}</title></head><body>"
                + "".join(f"<p>{p}</p>" for p in paragraphs)
                + "</body></html>"
            )
            name = f"page-{number}.html"
        (folder / name).write_text(text, encoding="utf-8")
        written += len(text.encode())
        number += 1
    return written


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--mb", type=float, default=5.0, help="corpus size in megabytes")
    parser.add_argument("--slices", type=int, default=5, help="alternate pipeline and model-only runs this many times")
    args = parser.parse_args()
    embedder = default_embedder()
    # Warm up on realistic lengths so neither run pays for loading the model or first-shape costs.
    warm = random.Random(1)
    embedder.embed([" ".join(sentence(warm) for _ in range(10)) for _ in range(64)])
    # The corpus goes in slices, each ingested and then embedded alone right after, so a change in
    # the machine's load hits both sides alike (the CPU here is shared).
    pipeline_s = model_s = 0.0
    texts_total = 0
    added = failures = 0
    size = 0
    with tempfile.TemporaryDirectory(prefix="memdesk-bench-") as folder:
        corpus = Path(folder) / "corpus"
        corpus.mkdir()
        size = make_corpus(corpus, args.mb)
        files = sorted(corpus.iterdir())
        db = open_database(Path(folder) / "memdesk.sqlite3")
        agent_id = db.execute(
            "INSERT INTO agents(name, created_at, system_prompt) VALUES ('bench', '2026-01-01T00:00:00+00:00', '')"
        ).lastrowid
        ingestor = Ingestor(db, ArchivalMemory(db, embedder, SystemClock()), SystemClock())
        slices = max(1, args.slices)
        for part in range(slices):
            batch = files[part::slices]
            last = db.scalar("SELECT COALESCE(MAX(id), 0) FROM passages")
            started = time.perf_counter()
            report = ingestor.ingest(batch, agent_id)
            pipeline_s += time.perf_counter() - started
            added += report.added
            failures += len(report.failures)
            texts = [
                r[0]
                for r in db.query(
                    "SELECT text FROM passages WHERE agent_id = ? AND id > ? ORDER BY id", (agent_id, last)
                )
            ]
            started = time.perf_counter()
            for start in range(0, len(texts), EMBED_BATCH):
                embedder.embed(texts[start : start + EMBED_BATCH])
            model_s += time.perf_counter() - started
            texts_total += len(texts)
        db.close()
    result = {
        "corpus_bytes": size,
        "files": added,
        "chunks": texts_total,
        "pipeline_s": round(pipeline_s, 2),
        "model_s": round(model_s, 2),
        "pipeline_chunks_per_s": round(texts_total / pipeline_s, 2),
        "model_chunks_per_s": round(texts_total / model_s, 2),
        "ratio": round(model_s / pipeline_s, 3),
        "failures": failures,
    }
    emit(result, args.json)


if __name__ == "__main__":
    main()
