"""Listing, removing and re-reading documents on the real store: a removed document leaves no
passage, FTS row or vector behind, and a re-read that fails keeps the earlier chunks."""

from __future__ import annotations

from memdesk.core.documents import catalog
from memdesk.core.documents.ingest import Ingestor
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.archival import ArchivalMemory


def _ingest(db, agent_id, clock, *paths):
    return Ingestor(db, ArchivalMemory(db, HashingEmbedder(), clock), clock).ingest(list(paths), agent_id)


def test_remove_deletes_passages_fts_rows_and_vectors(store, manual_clock, tmp_path):
    db, agent_id = store
    keep, drop = tmp_path / "keep.txt", tmp_path / "drop.txt"
    keep.write_text("Harbour lanterns glow at dusk. " * 200)
    drop.write_text("Violin lessons every Tuesday afternoon. " * 200)
    _ingest(db, agent_id, manual_clock, keep, drop)
    rows = {row.title: row for row in catalog.list_documents(db, agent_id)}
    assert rows["drop.txt"].status == "done" and rows["drop.txt"].embedded == rows["drop.txt"].chunk_count > 1

    assert catalog.remove_documents(db, ArchivalMemory(db, HashingEmbedder(), manual_clock), [rows["drop.txt"].id]) == 1

    assert [row.title for row in catalog.list_documents(db, agent_id)] == ["keep.txt"]
    assert db.scalar("SELECT COUNT(*) FROM passages_fts WHERE passages_fts MATCH 'violin'") == 0
    assert (
        db.scalar("SELECT COUNT(*) FROM passages_vec")
        == db.scalar("SELECT COUNT(*) FROM passages")
        == rows["keep.txt"].chunk_count
    )
    hits = ArchivalMemory(db, HashingEmbedder(), manual_clock).search(agent_id, "violin lessons harbour lanterns").hits
    assert hits and all("Violin" not in hit.passage.text for hit in hits)


def test_reingest_reads_unchanged_files_again_and_a_failed_reread_keeps_chunks(store, manual_clock, tmp_path):
    db, agent_id = store
    note = tmp_path / "note.txt"
    note.write_text("The spare key is under the blue flower pot. " * 50)
    _ingest(db, agent_id, manual_clock, note)
    [row] = catalog.list_documents(db, agent_id)
    assert _ingest(db, agent_id, manual_clock, note).unchanged == 1

    paths = catalog.prepare_reingest(db, [row.id]).paths
    report = _ingest(db, agent_id, manual_clock, *paths)
    assert report.unchanged == 0 and report.chunks == row.chunk_count
    assert db.scalar("SELECT COUNT(*) FROM passages") == row.chunk_count

    note.write_bytes(b"\x00\x01binary now")
    report = _ingest(db, agent_id, manual_clock, *catalog.prepare_reingest(db, [row.id]).paths)
    assert report.failures and "binary" in report.failures[0].reason
    [after] = catalog.list_documents(db, agent_id)
    assert after.status == "done" and "binary" in after.error and after.embedded == row.chunk_count


def test_unfinished_embedding_is_detected(store, manual_clock, tmp_path):
    db, agent_id = store
    note = tmp_path / "note.txt"
    note.write_text("Read, then stopped before embedding. " * 100)
    assert not catalog.has_unfinished(db, agent_id)
    read = []
    Ingestor(db, ArchivalMemory(db, HashingEmbedder(), manual_clock), manual_clock).ingest(
        [note],
        agent_id,
        lambda e: read.append(e.phase == "reading" and e.current_file is None),
        cancel=lambda: any(read),
    )
    assert catalog.has_unfinished(db, agent_id)
    _ingest(db, agent_id, manual_clock)
    assert not catalog.has_unfinished(db, agent_id)
