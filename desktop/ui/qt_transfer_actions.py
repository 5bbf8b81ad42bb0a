"""Moving agents in and out of MemDesk: export an agent as JSON, import one, save the conversation
as Markdown. File choices are asked on the GUI thread; reading and writing run on the job pool."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QFileDialog, QWidget

from desktop.app import Services
from desktop.core.agent import transfer
from desktop.errors import FileTransferError
from desktop.ui.qt_errors import ErrorHub, reports_errors
from desktop.ui.qt_jobs import Jobs


class TransferActions(QObject):
    """Create in the GUI thread; ``window`` parents the file dialogs, ``open_agent`` says which agent
    is open and ``include_details`` whether the Markdown carries thoughts and calls.

    Signals:
        imported(object): the AgentRecord of an imported agent
        saved(str): what was saved, for the status bar
    """

    imported = Signal(object)
    saved = Signal(str)

    def __init__(
        self, services: Services, jobs: Jobs, hub: ErrorHub, window: QWidget, open_agent: Callable[[], int | None], include_details: Callable[[], bool]
    ) -> None:
        super().__init__(window)
        self.services = services
        self.jobs = jobs
        self.hub = hub
        self.window = window
        self.open_agent = open_agent
        self.include_details = include_details

    @Slot()
    @reports_errors
    def on_export_markdown_triggered(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Export conversation", "conversation.md", "Markdown (*.md)")
        agent_id = self.open_agent()
        if path and agent_id is not None:
            _write(Path(path), transfer.conversation_markdown(self.services, agent_id, include_details=self.include_details()))
            self.saved.emit(f"Conversation saved to {path}")

    @Slot()
    @reports_errors
    def on_export_json_triggered(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Export agent", "agent.json", "JSON (*.json)")
        if path and self.open_agent() is not None:
            self.export_agent(Path(path))

    def export_agent(self, path: Path) -> None:
        agent_id = self.open_agent()
        self.jobs.run(
            lambda: _write(path, json.dumps(transfer.export_agent(self.services, agent_id), ensure_ascii=False, indent=1)),
            lambda _r: self.saved.emit(f"Agent saved to {path}"),
            self.hub.report,
        )

    @Slot()
    @reports_errors
    def on_import_triggered(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Import agent", "", "JSON (*.json)")
        if path:
            self.import_agent(Path(path))

    def import_agent(self, path: Path) -> None:
        def work():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
                raise FileTransferError(f"Could not read {path}: {getattr(error, 'strerror', None) or error}", hint="choose an agent file exported by MemDesk") from error
            return transfer.import_agent(self.services, data)

        self.jobs.run(work, self.imported.emit, self.hub.report)


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise FileTransferError(f"Could not save {path}: {error.strerror or error}", hint="choose another folder, or free some disk space") from error
