"""The ingestion thread's worker: runs document requests (ingest, remove, re-ingest, re-ingest from a
picked file) one after another on its own store connection, so a removal never races the embedding
of the same document and the GUI thread never waits for the embedder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QThread, Signal, Slot

from memdesk.app.services import Services
from memdesk.core.documents import catalog
from memdesk.core.documents.progress import FileFailure, IngestReport
from memdesk.core.runtime.base import CancelToken
from memdesk.ui.common.errors import reports_errors

#: The agent's step transaction may hold the write lock for as long as a tool call takes; the
#: ingestor's commits wait for it rather than failing the batch with "database is locked".
INGEST_BUSY_TIMEOUT_S = 60.0


class IngestWorker(QObject):
    """Lives in the ingestion thread; opens its store connection there on the first request.

    Signals:
        progress(object): an IngestProgress
        finished(object): the IngestReport of a batch
        removed(): documents were removed
        failed(object): an error that stopped a whole batch (per-file failures are in the report)
    """

    progress = Signal(object)
    finished = Signal(object)
    removed = Signal()
    failed = Signal(object)

    def __init__(self, open_services: Callable[[], Services], *, busy_timeout: float = INGEST_BUSY_TIMEOUT_S) -> None:
        super().__init__()
        self._open_services = open_services
        self._busy_timeout = busy_timeout
        self._services: Services | None = None
        self.cancel = CancelToken()

    def _store(self) -> Services:
        if self._services is None:
            self._services = self._open_services()
            self._services.db.set_busy_timeout(self._busy_timeout)
        return self._services

    @Slot(int, list)
    @reports_errors
    def ingest(self, agent_id: int, paths: list) -> None:
        """An empty ``paths`` only embeds chunks left unembedded (by a closed or killed app)."""
        self._ingest(agent_id, paths, [])

    def _ingest(self, agent_id: int, paths: list, refused: list[FileFailure]) -> None:
        if self.cancel.cancelled:
            return
        try:
            report = (
                self._store()
                .ingestor()
                .ingest([Path(p) for p in paths], agent_id, self.progress.emit, lambda: self.cancel.cancelled)
            )
        except Exception as error:  # noqa: BLE001 - reported on the message bar
            self.failed.emit(error)
            report = IngestReport(cancelled=True)
        report.failures = refused + (report.failures or [])
        self.finished.emit(report)

    @Slot(int, list)
    @reports_errors
    def remove(self, agent_id: int, document_ids: list) -> None:
        try:
            services = self._store()
            catalog.remove_documents(services.db, services.memory.archival, [int(i) for i in document_ids])
        except Exception as error:  # noqa: BLE001
            self.failed.emit(error)
        self.removed.emit()

    @Slot(int, list)
    @reports_errors
    def reingest(self, agent_id: int, document_ids: list) -> None:
        try:
            plan = catalog.prepare_reingest(self._store().db, [int(i) for i in document_ids])
        except Exception as error:  # noqa: BLE001
            self.failed.emit(error)
            self.finished.emit(IngestReport(cancelled=True))
            return
        self._ingest(agent_id, plan.paths, plan.refused)

    @Slot(int, int, str)
    @reports_errors
    def reingest_picked(self, agent_id: int, document_id: int, path: str) -> None:
        """Read a document from the file the user picked for it (a row from an agent file)."""
        try:
            path = catalog.pick_file(self._store().db, document_id, path)
        except Exception as error:  # noqa: BLE001
            self.failed.emit(error)
            self.finished.emit(IngestReport(cancelled=True))
            return
        self._ingest(agent_id, [path], [])

    @Slot()
    @reports_errors
    def shutdown(self) -> None:
        if self._services is not None:
            self._services.close()
            self._services = None
        QThread.currentThread().quit()
