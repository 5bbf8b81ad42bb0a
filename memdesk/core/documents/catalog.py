"""The documents an agent holds, as front ends list them, and the edits the ingestor does not make:
removing a document with everything derived from it, and asking for a fresh read (Qt-free).

A row an agent file brought (``path_imported``) names a path chosen by whoever wrote the file, so it
is never read from there: a fresh read of it is refused until the user picks its file here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from memdesk.core.base.errors import DocumentError
from memdesk.core.documents.progress import FileFailure
from memdesk.core.memory.archival import ArchivalMemory
from memdesk.core.storage import Database


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
    from_agent_file: bool = False  # its path came with an imported agent file: read only from a file the user picks


def list_documents(db: Database, agent_id: int) -> list[DocumentRow]:
    rows = db.query(
        "SELECT d.id, d.path, d.title, d.status, d.error, d.chunk_count,"
        " (SELECT COUNT(*) FROM passages p WHERE p.document_id = d.id"
        " AND p.embedded = 1), d.size_bytes, d.path_imported"
        " FROM documents d WHERE d.agent_id = ? ORDER BY d.id",
        (agent_id,),
    )
    return [
        DocumentRow(document_id, path, title, status, error, chunks, embedded, size, bool(imported))
        for document_id, path, title, status, error, chunks, embedded, size, imported in rows
    ]


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
    """Put back a document row an agent file carried (its file may not exist on this machine),
    marked as imported: its path is the file's word, not the user's. The caller stores its
    passages. Returns the new id."""
    return db.execute(
        "INSERT INTO documents(agent_id, path, title, content_hash, size_bytes, mime, status, error, chunk_count,"
        " created_at, updated_at,"
        " path_imported) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
        (
            agent_id,
            str(row["path"]),
            str(row.get("title") or row["path"]),
            str(row.get("content_hash") or ""),
            int(row.get("size_bytes") or 0),
            str(row.get("mime") or ""),
            "done" if row.get("status") in (None, "embedding", "pending", "reading") else str(row["status"]),
            row.get("error"),
            int(row.get("chunk_count") or 0),
            str(row["created_at"]),
            str(row.get("updated_at") or row["created_at"]),
        ),
    ).lastrowid


@dataclass
class Reingest:
    paths: list[str] = field(default_factory=list)  # to ingest again
    refused: list[FileFailure] = field(default_factory=list)  # not read, and why (also the row's error)


def prepare_reingest(db: Database, document_ids: list[int]) -> Reingest:
    """Forget the content hashes of these documents so the next ingestion reads them again even if
    unchanged, and list their paths to ingest. Their chunks stay until the new read replaces them
    in one transaction, so a re-read that fails loses nothing. A row from an agent file, or whose
    path is now a folder, is refused: a document is one file, read from where the user chose it."""
    plan = Reingest()
    if not document_ids:
        return plan
    marks = ",".join("?" * len(document_ids))
    with db.transaction():
        for document_id, path, imported in db.query(
            f"SELECT id, path, path_imported FROM documents WHERE id IN ({marks}) ORDER BY id", document_ids
        ):
            if imported:
                reason = (
                    "its path came with an imported agent file, so it is not read from there (pick"
                    " the file to read it again)"
                )
            elif Path(path).is_dir():
                reason = "is a folder now, not the file that was read (add the folder's files instead)"
            else:
                db.execute("UPDATE documents SET content_hash = '' WHERE id = ?", (document_id,))
                plan.paths.append(path)
                continue
            plan.refused.append(FileFailure(path, reason))
            db.execute("UPDATE documents SET error = ? WHERE id = ?", (reason, document_id))
    return plan


def pick_file(db: Database, document_id: int, path: str | Path) -> str:
    """The user chose the file a document stands for (a row from an agent file names another
    machine's path): the row names that file from now on and its next read replaces its passages.
    Returns the path to ingest."""
    key = str(Path(path).absolute())
    if Path(key).is_dir():
        raise DocumentError(f"{Path(key).name} is a folder", hint="pick the document's file")
    with db.transaction():
        row = db.query_one("SELECT agent_id FROM documents WHERE id = ?", (document_id,))
        if row is None:
            raise DocumentError("That document is no longer in the list")
        other = db.query_one(
            "SELECT title FROM documents WHERE agent_id = ? AND path = ? AND id != ?", (row[0], key, document_id)
        )
        if other is not None:
            raise DocumentError(
                f"{Path(key).name} is already in the list as {other[0]!r}",
                hint="re-ingest that one, and remove this one if it is the same document",
            )
        db.execute(
            "UPDATE documents SET path = ?, content_hash = '', path_imported = 0 WHERE id = ?", (key, document_id)
        )
    return key


def has_unfinished(db: Database, agent_id: int) -> bool:
    """Chunks stored but not yet embedded, e.g. after the app was closed or killed mid-batch."""
    return bool(
        db.scalar(
            "SELECT 1 FROM passages WHERE agent_id = ? AND embedded = 0 AND document_id IS NOT NULL LIMIT 1",
            (agent_id,),
        )
    )


def reembed_store(db: Database, archival: ArchivalMemory) -> int:
    """Switch the store to archival memory's embedder: every vector is dropped and every passage,
    message and document marked for embedding again (the ingestor and the lazy message indexer
    then fill them in). Returns how many passages need new vectors."""
    with db.transaction():
        archival.space.reset()
        db.execute("UPDATE documents SET status = 'embedding' WHERE status = 'done'")
    return int(db.scalar("SELECT COUNT(*) FROM passages"))
