"""Killing a real ingestion process mid-way, then running again, finishes without duplicates or
losses; unchanged files are skipped and changed files replace their old chunks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memdesk.core.base.clock import ManualClock
from memdesk.core.documents.ingest import Ingestor
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.archival import ArchivalMemory
from memdesk.core.storage import open_database
from testing.fault_children.ingest import CRASHED

ROOT = Path(__file__).resolve().parents[2]


def _make_files(folder: Path, count: int) -> None:
    folder.mkdir()
    for n in range(count):
        paragraphs = [f"Document {n} paragraph {p} talks about topic {n * 100 + p} at length." * 8 for p in range(40)]
        (folder / f"doc-{n:02d}.txt").write_text("\n\n".join(paragraphs), encoding="utf-8")


def _run(db_path: Path, folder: Path, crash: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # The fault campaign's ingestion child (testing.fault_children.ingest), crashed at a chosen point
    # it observes from outside the pipeline (its progress reports).
    crash_after = ["--crash-after", crash] if crash else []
    return subprocess.run(
        [sys.executable, "-m", "testing.fault_children.ingest", str(db_path), str(folder), *crash_after],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def _expected_chunks(tmp_path: Path, folder: Path) -> int:
    db = open_database(tmp_path / "reference.sqlite3")
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('a', 'now', '')")
    clock = ManualClock()
    Ingestor(db, ArchivalMemory(db, HashingEmbedder(), clock), clock).ingest([folder], 1)
    count = db.scalar("SELECT COUNT(*) FROM passages")
    db.close()
    return count


@pytest.mark.processes
@pytest.mark.parametrize("crash", ["reading:3", "embedding:1"])
def test_killed_ingestion_resumes_without_duplicates(tmp_path, crash):
    folder = tmp_path / "docs"
    _make_files(folder, 24)  # more chunks than one embedding batch
    db_path = tmp_path / "store.sqlite3"
    db = open_database(db_path)
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('a', 'now', '')")
    db.close()
    killed = _run(db_path, folder, crash)
    assert killed.returncode == CRASHED, killed.stderr
    db = open_database(db_path)
    partial_documents = db.scalar("SELECT COUNT(*) FROM documents")
    unembedded = db.scalar("SELECT COUNT(*) FROM passages WHERE embedded = 0")
    db.close()
    assert partial_documents == 3 if crash.startswith("reading") else unembedded > 0
    resumed = _run(db_path, folder, None)
    assert resumed.returncode == 0, resumed.stderr
    db = open_database(db_path)
    total = db.scalar("SELECT COUNT(*) FROM passages")
    distinct = db.scalar("SELECT COUNT(DISTINCT document_id || ':' || chunk_index) FROM passages")
    vectors = db.scalar("SELECT COUNT(*) FROM passages_vec")
    statuses = {r[0] for r in db.query("SELECT status FROM documents")}
    db.close()
    assert total == distinct == vectors == _expected_chunks(tmp_path, folder)
    assert statuses == {"done"}


def test_unchanged_files_are_skipped_and_changed_ones_replaced(store, manual_clock, tmp_path):
    db, agent_id = store
    folder = tmp_path / "docs"
    folder.mkdir()
    stable, edited = folder / "stable.txt", folder / "edited.txt"
    stable.write_text("The lighthouse keeper feeds the cat.", encoding="utf-8")
    edited.write_text("The meeting is on Tuesday.", encoding="utf-8")
    ingestor = Ingestor(db, ArchivalMemory(db, HashingEmbedder(), manual_clock), manual_clock)
    first = ingestor.ingest([folder], agent_id)
    assert (first.added, first.chunks) == (2, 2)
    ids_before = {r[0] for r in db.query("SELECT id FROM passages")}
    again = ingestor.ingest([folder], agent_id)
    assert (again.added, again.replaced, again.unchanged, again.chunks, again.embedded) == (0, 0, 2, 0, 0)
    assert {r[0] for r in db.query("SELECT id FROM passages")} == ids_before
    edited.write_text("The meeting moved to Thursday afternoon.", encoding="utf-8")
    changed = ingestor.ingest([folder], agent_id)
    assert (changed.replaced, changed.unchanged) == (1, 1)
    texts = sorted(r[0] for r in db.query("SELECT text FROM passages"))
    assert texts == ["The lighthouse keeper feeds the cat.", "The meeting moved to Thursday afternoon."]
    assert db.scalar("SELECT COUNT(*) FROM passages_vec") == 2
    assert db.scalar("SELECT COUNT(*) FROM documents") == 2
