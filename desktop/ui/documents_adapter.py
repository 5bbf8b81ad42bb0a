"""A thin, Qt-free adapter between the documents panel and the documents table.

The full ingestion pipeline (desktop/core/documents, resumable, with its own progress API) is
being built separately; until it lands this adapter reads files with its parsers, chunks them,
stores passages with their citations and embeds them in batches, recording each stage in the
``documents`` table so the panel (and a restarted app) can see where every file stands.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from desktop.core.clock import iso
from desktop.core.documents import parsers
from desktop.core.memory.archival import INSERT_CHUNK_TOKENS
from desktop.core.runtime.base import CancelToken
from desktop.core.text.chunking import chunk_text
from desktop.errors import DocumentError, GenerationCancelled

EMBED_BATCH = 32


@dataclass(frozen=True)
class DocumentRow:
    id: int
    path: str
    title: str
    status: str  # pending, reading, embedding, done, failed
    error: str | None
    chunk_count: int
    embedded: int
    size_bytes: int


@dataclass(frozen=True)
class Progress:
    path: str
    stage: str  # reading, embedding, done, failed
    done: int
    total: int
    error: str = ""


ProgressCallback = Callable[[Progress], None]


def expand(paths: Iterable[Path]) -> list[Path]:
    """Files to ingest: each file as given, and every supported file under each folder."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            for root, _dirs, files in os.walk(path):
                found.extend(Path(root) / name for name in sorted(files) if parsers.supported(Path(name)))
        else:
            found.append(path)
    return found


def list_documents(services, agent_id: int) -> list[DocumentRow]:
    rows = services.db.query(
        "SELECT d.id, d.path, d.title, d.status, d.error, d.chunk_count,"
        " (SELECT COUNT(*) FROM passages p WHERE p.document_id = d.id AND p.embedded = 1), d.size_bytes"
        " FROM documents d WHERE d.agent_id = ? ORDER BY d.id",
        (agent_id,),
    )
    return [DocumentRow(*row) for row in rows]


def remove_document(services, document_id: int) -> None:
    ids = [r[0] for r in services.db.query("SELECT id FROM passages WHERE document_id = ?", (document_id,))]
    with services.db.transaction():
        services.memory.archival.delete(ids)
        services.db.execute("DELETE FROM documents WHERE id = ?", (document_id,))


def ingest(services, agent_id: int, path: Path, on_progress: ProgressCallback, cancel: CancelToken | None = None) -> None:
    """Read, store and embed one file. Failures are recorded on the document, not raised."""
    db, now = services.db, iso(services.clock.now())
    key = str(path.resolve())
    try:
        data = path.read_bytes()
    except OSError as error:
        _fail(services, agent_id, key, path.name, now, f"{path.name}: cannot read the file ({error.strerror})", on_progress)
        return
    digest = hashlib.sha256(data).hexdigest()
    existing = db.query_one("SELECT id, content_hash, status FROM documents WHERE agent_id = ? AND path = ?", (agent_id, key))
    if existing and existing[1] == digest and existing[2] in ("embedding", "done"):
        document_id = existing[0]  # same content: resume embedding where it stopped
    else:
        if existing:
            remove_document(services, existing[0])
        on_progress(Progress(key, "reading", 0, 1))
        try:
            parsed = parsers.parse(path, data)
        except DocumentError as error:
            _fail(services, agent_id, key, path.name, now, error.user_message, on_progress, digest, len(data))
            return
        with db.transaction():
            document_id = db.execute(
                "INSERT INTO documents(agent_id, path, title, content_hash, size_bytes, mime, status, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, 'embedding', ?, ?)",
                (agent_id, key, parsed.title or path.name, digest, len(data), parsed.mime, now, now),
            ).lastrowid
            index = 0
            for section in parsed.sections:
                for chunk in chunk_text(section.text, max_tokens=INSERT_CHUNK_TOKENS):
                    db.execute(
                        "INSERT INTO passages(agent_id, text, created_at, tags, document_id, chunk_index, page, section,"
                        " char_start, char_end, embedded) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
                        (agent_id, chunk.text, now, json.dumps([]), document_id, index, section.page, section.section, chunk.start, chunk.end),
                    )
                    index += 1
            db.execute("UPDATE documents SET chunk_count = ? WHERE id = ?", (index, document_id))
        on_progress(Progress(key, "reading", 1, 1))
    total = int(db.scalar("SELECT COUNT(*) FROM passages WHERE document_id = ?", (document_id,)))
    while True:
        if cancel is not None and cancel.cancelled:
            raise GenerationCancelled("Ingestion stopped")
        batch = db.query("SELECT id, text FROM passages WHERE document_id = ? AND embedded = 0 ORDER BY id LIMIT ?", (document_id, EMBED_BATCH))
        done = total - int(db.scalar("SELECT COUNT(*) FROM passages WHERE document_id = ? AND embedded = 0", (document_id,)))
        on_progress(Progress(key, "embedding", done, total))
        if not batch:
            break
        vectors = services.memory.archival.embedder.embed([text for _id, text in batch])
        services.memory.archival.store_vectors(agent_id, [passage_id for passage_id, _text in batch], vectors)
    db.execute("UPDATE documents SET status = 'done', error = NULL, updated_at = ? WHERE id = ?", (iso(services.clock.now()), document_id))
    on_progress(Progress(key, "done", total, total))


def _fail(services, agent_id, key, title, now, message, on_progress, digest="", size=0) -> None:
    services.db.execute(
        "INSERT INTO documents(agent_id, path, title, content_hash, size_bytes, status, error, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, 'failed', ?, ?, ?) ON CONFLICT(agent_id, path) DO UPDATE SET status = 'failed',"
        " error = excluded.error, updated_at = excluded.updated_at",
        (agent_id, key, title, digest, size, message, now, now),
    )
    on_progress(Progress(key, "failed", 0, 0, message))
