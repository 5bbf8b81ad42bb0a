"""The documents an agent holds, as front ends list them, and the edits the ingestor does not make:
removing a document with everything derived from it, and asking for a fresh read (Qt-free)."""

from __future__ import annotations

from dataclasses import dataclass

from desktop.core.memory.archival import ArchivalMemory
from desktop.core.storage import Database


@dataclass(frozen=True)
class DocumentRow:
    id: int
    path: str  # absolute, as the ingestor keys documents
    title: str
    status: str  # embedding, done, failed (the ingestor writes no other)
    error: str | None  # why the last read failed; a document that failed a re-read keeps its chunks
    chunk_count: int
    embedded: int
    size_bytes: int


def list_documents(db: Database, agent_id: int) -> list[DocumentRow]:
    rows = db.query(
        "SELECT d.id, d.path, d.title, d.status, d.error, d.chunk_count,"
        " (SELECT COUNT(*) FROM passages p WHERE p.document_id = d.id AND p.embedded = 1), d.size_bytes"
        " FROM documents d WHERE d.agent_id = ? ORDER BY d.id",
        (agent_id,),
    )
    return [DocumentRow(*row) for row in rows]


def remove_documents(db: Database, archival: ArchivalMemory, document_ids: list[int]) -> int:
    """Delete documents with their passages and vectors (through archival memory, which owns them),
    all in one transaction. ``archival`` must be built on ``db``. Returns how many were removed."""
    if not document_ids:
        return 0
    marks = ",".join("?" * len(document_ids))
    with db.transaction():
        archival.delete_documents(document_ids)
        return db.execute(f"DELETE FROM documents WHERE id IN ({marks})", document_ids).rowcount


def restore_document(db: Database, agent_id: int, row: dict) -> int:
    """Put back a document row an agent file carried (its file may not exist on this machine);
    the caller stores its passages. Returns the new id."""
    return db.execute(
        "INSERT INTO documents(agent_id, path, title, content_hash, size_bytes, mime, status, error, chunk_count, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            agent_id, str(row["path"]), str(row.get("title") or row["path"]), str(row.get("content_hash") or ""), int(row.get("size_bytes") or 0),
            str(row.get("mime") or ""), "done" if row.get("status") in (None, "embedding", "pending", "reading") else str(row["status"]),
            row.get("error"), int(row.get("chunk_count") or 0), str(row["created_at"]), str(row.get("updated_at") or row["created_at"]),
        ),
    ).lastrowid


def paths_for_reingest(db: Database, document_ids: list[int]) -> list[str]:
    """Forget the content hashes of these documents so the next ingestion reads them again even if
    unchanged; returns their paths to ingest. Their chunks stay until the new read replaces them
    in one transaction, so a re-read that fails loses nothing."""
    if not document_ids:
        return []
    marks = ",".join("?" * len(document_ids))
    with db.transaction():
        paths = [row[0] for row in db.query(f"SELECT path FROM documents WHERE id IN ({marks}) ORDER BY id", document_ids)]
        db.execute(f"UPDATE documents SET content_hash = '' WHERE id IN ({marks})", document_ids)
    return paths


def has_unfinished(db: Database, agent_id: int) -> bool:
    """Chunks stored but not yet embedded, e.g. after the app was closed or killed mid-batch."""
    return bool(db.scalar("SELECT 1 FROM passages WHERE agent_id = ? AND embedded = 0 AND document_id IS NOT NULL LIMIT 1", (agent_id,)))


def reembed_store(db: Database, archival: ArchivalMemory) -> int:
    """Switch the store to archival memory's embedder: every vector is dropped and every passage,
    message and document marked for embedding again (the ingestor and the lazy message indexer
    then fill them in). Returns how many passages need new vectors."""
    with db.transaction():
        archival.space.reset()
        db.execute("UPDATE documents SET status = 'embedding' WHERE status = 'done'")
    return int(db.scalar("SELECT COUNT(*) FROM passages"))
