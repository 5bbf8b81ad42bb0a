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
from desktop.ui.qt_errors import ErrorHub
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
    def on_export_markdown_triggered(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Export conversation", "conversation.md", "Markdown (*.md)")
        agent_id = self.open_agent()
        if path and agent_id is not None:
            Path(path).write_text(transfer.conversation_markdown(self.services, agent_id, include_details=self.include_details()), encoding="utf-8")
            self.saved.emit(f"Conversation saved to {path}")

    @Slot()
    def on_export_json_triggered(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Export agent", "agent.json", "JSON (*.json)")
        if path and self.open_agent() is not None:
            self.export_agent(Path(path))

    def export_agent(self, path: Path) -> None:
        agent_id = self.open_agent()
        self.jobs.run(
            lambda: path.write_text(json.dumps(transfer.export_agent(self.services, agent_id), ensure_ascii=False, indent=1), encoding="utf-8"),
            lambda _r: self.saved.emit(f"Agent saved to {path}"),
            self.hub.report,
        )

    @Slot()
    def on_import_triggered(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Import agent", "", "JSON (*.json)")
        if path:
            self.import_agent(Path(path))

    def import_agent(self, path: Path) -> None:
        def work():
            return transfer.import_agent(self.services, json.loads(path.read_text(encoding="utf-8")))

        self.jobs.run(work, self.imported.emit, self.hub.report)
