"""The ingestion pipeline: read every file into chunks (searchable by FTS at once), then embed.

Crash safety comes from the store, not from memory: each document is replaced in one transaction
(status 'embedding' with all its chunks, or nothing), and each embedding batch commits its vectors
and ``passages.embedded`` together. A new run skips documents whose content hash is unchanged and
embeds whatever chunks are still unembedded, so a killed batch finishes without duplicates or losses.

The paths it is given are the user's choice (added, or confirmed by picking the file): reading one
clears the mark of a row an agent file brought (documents/catalog.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from memdesk.core.base.clock import Clock, iso
from memdesk.core.base.errors import DocumentError
from memdesk.core.documents import parsers
from memdesk.core.documents.files import discover
from memdesk.core.documents.progress import Eta, FileFailure, IngestProgress, IngestReport
from memdesk.core.memory.archival import ArchivalMemory, NewPassage
from memdesk.core.storage import Database
from memdesk.core.text.chunking import chunk_for_embedding

MAX_FILE_BYTES = 50 * 1024 * 1024
#: What a zip-based document (.docx) may unpack to, summed over its parts and checked before any
#: is inflated: the file cap alone let a 504 KB .docx whose text unpacks to 136 MB grow python-docx
#: past 1.4 GB for over five minutes. Real documents unpack to a few times their size at most
#: (pictures barely compress), so twice the file cap refuses no real document.
MAX_UNPACKED_BYTES = 2 * MAX_FILE_BYTES
#: Tokens a chunk repeats from the end of the previous one, so a fact cut in two is whole in one.
OVERLAP_TOKENS = 40
EMBED_BATCH = 256

ProgressCallback = Callable[[IngestProgress], None]


class Ingestor:
    """Owns the ``documents`` rows; their passages and vectors are written through ``archival``,
    which must be built on the same connection as ``db`` (their writes share transactions)."""

    def __init__(
        self,
        db: Database,
        archival: ArchivalMemory,
        clock: Clock,
        *,
        max_bytes: int = MAX_FILE_BYTES,
        max_unpacked_bytes: int = MAX_UNPACKED_BYTES,
    ) -> None:
        self._db = db
        self._archival = archival
        self._embedder = archival.embedder
        self._clock = clock
        self._max_bytes = max_bytes
        self._max_unpacked_bytes = max_unpacked_bytes

    def ingest(
        self,
        paths: list[Path | str],
        agent_id: int,
        progress_callback: ProgressCallback | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> IngestReport:
        """Read then embed. Refuses a store built with another embedding model before touching it."""
        self._archival.ensure_space()
        notify = progress_callback or (lambda event: None)
        cancelled = cancel or (lambda: False)
        report = IngestReport()
        files = list(discover([Path(p) for p in paths]))
        eta = Eta(len(files))
        for number, item in enumerate(files):
            if cancelled():
                report.cancelled = True
                return report
            if isinstance(item, DocumentError):
                report.failures.append(FileFailure(item.message.split(":")[0], item.user_message))
                continue
            notify(
                IngestProgress("reading", number, len(files), str(item), eta.remaining(number), len(report.failures))
            )
            try:
                self._read_one(item, agent_id, report)
            except DocumentError as error:
                report.failures.append(FileFailure(str(item), error.user_message))
                self._record_failure(item, agent_id, error.user_message)
        notify(IngestProgress("reading", len(files), len(files), None, 0.0, len(report.failures)))
        self._embed_pending(agent_id, report, notify, cancelled)
        notify(IngestProgress("done", report.embedded, report.embedded, None, 0.0, len(report.failures)))
        return report

    # --- phase 1 -------------------------------------------------------------------------------
    def _read_one(self, path: Path, agent_id: int, report: IngestReport) -> None:
        try:
            size = path.stat().st_size
            if size > self._max_bytes:
                raise DocumentError(
                    f"{path.name}: file is too large ({size // (1024 * 1024)} MB;"
                    f" the limit is {self._max_bytes // (1024 * 1024)} MB)"
                )
            if size == 0:
                raise DocumentError(f"{path.name}: the file is empty")
            data = path.read_bytes()
        except FileNotFoundError as error:
            raise DocumentError(f"{path.name}: the file vanished before it could be read") from error
        except IsADirectoryError as error:
            raise DocumentError(f"{path.name}: is a folder, not a file") from error
        except PermissionError as error:
            raise DocumentError(f"{path.name}: permission denied") from error
        except OSError as error:
            raise DocumentError(f"{path.name}: could not be read ({error.strerror or error})") from error
        digest = hashlib.sha256(data).hexdigest()
        key = str(path.absolute())
        existing = self._db.query_one(
            "SELECT id, content_hash, status, path_imported FROM documents WHERE agent_id = ? AND path = ?",
            (agent_id, key),
        )
        # A row an agent file brought is read afresh when the user names its path: its passages
        # are the file's word, whatever content hash it claims.
        if existing is not None and existing[1] == digest and existing[2] in ("embedding", "done") and not existing[3]:
            report.unchanged += 1
            return
        document = parsers.parse(path, data, max_unpacked_bytes=self._max_unpacked_bytes)
        chunks = []
        running = 0
        for section in document.sections:
            base = section.offset if section.offset is not None else (0 if section.page is not None else running)
            running += len(section.text) + 2
            for chunk in chunk_for_embedding(section.text, self._embedder, overlap_tokens=OVERLAP_TOKENS):
                chunks.append((section, chunk, base))
        if not chunks:
            raise DocumentError(f"{path.name}: no text found")
        moment = self._clock.now()
        now = iso(moment)
        with self._db.transaction():
            if existing is not None:
                self._archival.delete_documents([existing[0]])
                self._db.execute(
                    "UPDATE documents SET title = ?, content_hash = ?, size_bytes = ?, mime = ?, status = 'embedding',"
                    " error = NULL,"
                    " chunk_count = ?, updated_at = ?, path_imported = 0 WHERE id = ?",
                    (document.title, digest, len(data), document.mime, len(chunks), now, existing[0]),
                )
                document_id = existing[0]
            else:
                document_id = self._db.execute(
                    "INSERT INTO documents(agent_id, path, title, content_hash, size_bytes, mime, status, chunk_count,"
                    " created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, 'embedding', ?, ?, ?)",
                    (agent_id, key, document.title, digest, len(data), document.mime, len(chunks), now, now),
                ).lastrowid
            # Offsets are into the file's text for text formats, into the page for PDFs (the
            # citation names the page), otherwise into the extracted text.
            self._archival.add(
                agent_id,
                [
                    NewPassage(
                        chunk.text,
                        moment,
                        ["document"],
                        document_id,
                        index,
                        section.page,
                        section.section,
                        base + chunk.start,
                        base + chunk.end,
                    )
                    for index, (section, chunk, base) in enumerate(chunks)
                ],
            )
        report.chunks += len(chunks)
        if existing is not None and existing[1]:
            report.replaced += 1
        else:
            report.added += 1

    def _record_failure(self, path: Path, agent_id: int, reason: str) -> None:
        """A new file that failed is listed as failed; a known one keeps its earlier chunks."""
        now = iso(self._clock.now())
        key = str(path.absolute())
        with self._db.transaction():
            if self._db.scalar("SELECT 1 FROM documents WHERE agent_id = ? AND path = ?", (agent_id, key)):
                self._db.execute(
                    "UPDATE documents SET error = ?, updated_at = ? WHERE agent_id = ? AND path = ?",
                    (reason, now, agent_id, key),
                )
            else:
                self._db.execute(
                    "INSERT INTO documents(agent_id, path, title, content_hash, size_bytes, status, error, created_at,"
                    " updated_at)"
                    " VALUES (?, ?, ?, '', 0, 'failed', ?, ?, ?)",
                    (agent_id, key, path.name, reason, now, now),
                )

    # --- phase 2 -------------------------------------------------------------------------------
    def _embed_pending(
        self, agent_id: int, report: IngestReport, notify: ProgressCallback, cancelled: Callable[[], bool]
    ) -> None:
        total = int(self._db.scalar("SELECT COUNT(*) FROM passages WHERE agent_id = ? AND embedded = 0", (agent_id,)))
        eta = Eta(total)
        while not cancelled():
            rows = self._db.query(
                "SELECT p.id, p.text, d.path FROM passages p LEFT JOIN documents d ON d.id = p.document_id"
                " WHERE p.agent_id = ? AND p.embedded = 0 ORDER BY p.id LIMIT ?",
                (agent_id, EMBED_BATCH),
            )
            if not rows:
                break
            notify(
                IngestProgress(
                    "embedding",
                    report.embedded,
                    total,
                    rows[0][2],
                    eta.remaining(report.embedded),
                    len(report.failures),
                )
            )
            vectors = self._embedder.embed([r[1] for r in rows])
            with self._db.transaction():
                self._archival.store_vectors(agent_id, [r[0] for r in rows], vectors)
                self._db.execute(
                    "UPDATE documents SET status = 'done' WHERE agent_id = ? AND status = 'embedding'"
                    " AND NOT EXISTS (SELECT 1 FROM passages p WHERE p.document_id = documents.id AND p.embedded = 0)",
                    (agent_id,),
                )
            report.embedded += len(rows)
        else:
            report.cancelled = True
        notify(IngestProgress("embedding", report.embedded, total, None, 0.0, len(report.failures)))
