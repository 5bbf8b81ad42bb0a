"""The documents an agent holds, as front ends list them, and the edits the ingestor does not make:
removing a document with everything derived from it, and asking for a fresh read (Qt-free)."""

from __future__ import annotations

from dataclasses import dataclass

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


def remove_documents(db: Database, document_ids: list[int]) -> int:
    """Delete documents with their passages (and so their FTS rows, through the triggers) and
    their vectors, all in one transaction. vec0 tables have no foreign keys, so the vectors must go
    explicitly, before the passages that name them. Returns how many documents were removed."""
    if not document_ids:
        return 0
    marks = ",".join("?" * len(document_ids))
    has_vectors = bool(db.scalar("SELECT 1 FROM sqlite_master WHERE name = 'passages_vec'"))
    with db.transaction():
        if has_vectors:
            db.execute(f"DELETE FROM passages_vec WHERE rowid IN (SELECT id FROM passages WHERE document_id IN ({marks}))", document_ids)
        db.execute(f"DELETE FROM passages WHERE document_id IN ({marks})", document_ids)
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
