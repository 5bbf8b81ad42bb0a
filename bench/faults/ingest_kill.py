"""kill -9 during ingestion of a 200-file folder, 50 trials: the next run resumes, ends with the
chunk count of an uninterrupted run and no duplicate passages."""

from __future__ import annotations

import random
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from bench.faults.support import child, child_env, kill_after


def _make_folder(folder: Path, files: int, rng: random.Random) -> None:
    folder.mkdir(parents=True)
    words = "garden river lantern violin harbour orchard ledger pepper canvas marble thunder meadow".split()
    for n in range(files):
        paragraphs = [
            " ".join(rng.choice(words) for _ in range(rng.randint(40, 120))) + "." for _ in range(rng.randint(3, 12))
        ]
        (folder / f"note-{n:03d}.txt").write_text("\n\n".join(paragraphs), encoding="utf-8")


def _new_store(path: Path) -> None:
    from memdesk.core.storage import open_database

    db = open_database(path)
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('a', '2026-01-01T00:00:00+00:00', '')")
    db.close()


def _chunk_counts(path: Path) -> tuple[int, int, int, set[str]]:
    from memdesk.core.storage import open_database

    db = open_database(path)
    try:
        total = int(db.scalar("SELECT COUNT(*) FROM passages"))
        distinct = int(db.scalar("SELECT COUNT(DISTINCT document_id || ':' || chunk_index) FROM passages"))
        vectors = int(db.scalar("SELECT COUNT(*) FROM passages_vec"))
        statuses = {r[0] for r in db.query("SELECT status FROM documents")}
        return total, distinct, vectors, statuses
    finally:
        db.close()


def run(trials: int, rng: random.Random, files: int = 200) -> dict:
    from testing.fault_children import ingest as ingest_child

    with tempfile.TemporaryDirectory(prefix="memdesk-faults-") as folder:
        base = Path(folder)
        docs = base / "docs"
        _make_folder(docs, files, rng)
        reference = base / "reference.sqlite3"
        _new_store(reference)
        started = time.perf_counter()
        ingest_child.ingest(reference, docs)
        reference_s = time.perf_counter() - started
        expected = _chunk_counts(reference)[0]
        mismatches = duplicates = unfinished = killed_mid_run = attempts = 0
        # A trial counts once the kill landed during ingestion; a child that finished first is
        # resumed and checked too, and another trial is run (up to three times the count).
        while killed_mid_run < trials and attempts < 3 * trials:
            attempts += 1
            store = base / f"trial-{attempts}.sqlite3"
            _new_store(store)
            process = subprocess.Popen(
                child("ingest", str(store), str(docs)),
                env=child_env(base / "home"),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            if process.stdout.readline().strip() == "ready":  # imported and about to ingest
                kill_after(process, rng.uniform(0.0, reference_s))
            process.kill()
            if process.wait() == -signal.SIGKILL:
                chunks, _, vectors, statuses = _chunk_counts(store)
                killed_mid_run += chunks < expected or vectors < chunks or statuses != {"done"}
            ingest_child.ingest(store, docs)
            total, distinct, vectors, statuses = _chunk_counts(store)
            mismatches += total != expected
            duplicates += total - distinct
            unfinished += vectors != total or statuses != {"done"}
            store.unlink(missing_ok=True)
    return {
        "trials": trials,
        "attempts": attempts,
        "files": files,
        "reference_chunks": expected,
        "killed_mid_run": killed_mid_run,
        "chunk_count_mismatches": mismatches,
        "duplicate_passages": duplicates,
        "unfinished_after_resume": unfinished,
        "ok": mismatches == 0 and duplicates == 0 and unfinished == 0 and killed_mid_run == trials,
    }
