"""Moving agents in and out of MemDesk: File > Export… (memory as a readable folder of Markdown, for
one agent or every agent, or an agent as a Letta agent file or MemDesk JSON), export an agent as
a Letta agent file (.af) or MemDesk JSON, import either (the summary dialog says what came in,
what was adjusted and what MemDesk could not map), review the tools an import brought, save the
conversation as Markdown. File choices are asked on the GUI thread; reading the store and the
files, and writing them, run on the job pool."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QFileDialog, QWidget

from memdesk.app.operations import agent_file_options, export_memory_folder, import_agent_path
from memdesk.app.services import Services
from memdesk.core.agent.conversation_view import conversation_markdown
from memdesk.core.base.errors import FileTransferError
from memdesk.core.tools.imported import ImportedTools
from memdesk.core.transfer.agentfile import ImportSummary, export_path
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.common.window_state import WindowState
from memdesk.ui.dialogs.agent_files import ImportedToolsDialog, ImportSummaryDialog
from memdesk.ui.dialogs.export_memory import FOLDER, ExportDialog
from memdesk.ui.workers.jobs import Jobs


class TransferActions(QObject):
    """Create in the GUI thread; ``window`` parents the file dialogs, ``state`` says which agent is
    shown and ``include_details`` whether the Markdown carries thoughts and calls.

    Signals:
        imported(object): the ImportSummary of an import (its agents are in the store)
        saved(str): what was saved, for the status bar
        open_requested(int): the user asked to open an imported agent
        tools_changed(int): the user enabled or disabled an imported tool of this agent
    """

    imported = Signal(object)
    saved = Signal(str)
    open_requested = Signal(int)
    tools_changed = Signal(int)

    def __init__(
        self,
        services: Services,
        jobs: Jobs,
        hub: ErrorHub,
        window: QWidget,
        state: WindowState,
        include_details: Callable[[], bool],
    ) -> None:
        super().__init__(window)
        self.services = services
        self.jobs = jobs
        self.hub = hub
        self.window = window
        self.state = state
        self.include_details = include_details
        self.summary_dialog: ImportSummaryDialog | None = None
        self.tools_dialog: ImportedToolsDialog | None = None
        self.export_dialog: ExportDialog | None = None

    @Slot()
    @reports_errors
    def on_export_triggered(self) -> None:
        """File > Export…: the dialog asks how, of whom and where (the agents are read on the job
        pool first; the dialog is ``export_dialog`` once it shows)."""
        agent_id, name = self.state.agent_id, self.state.agent_name
        if agent_id is None:
            return
        agents = self.services.agents
        self.jobs.run(
            lambda: [record.id for record in agents.list()],
            lambda every: self._show_export_dialog(agent_id, name, every),
            self.hub.report,
        )

    def _show_export_dialog(self, agent_id: int, name: str, every_agent: list[int]) -> None:
        if self.export_dialog is not None:
            self.export_dialog.close()
        dialog = ExportDialog(
            (agent_id, name), every_agent, encrypted=self.services.key is not None, parent=self.window
        )
        dialog.export_requested.connect(self.export)
        dialog.finished.connect(lambda _code: setattr(self, "export_dialog", None))
        self.export_dialog = dialog
        dialog.open()

    @Slot(str, list, str)
    @reports_errors
    def export(self, kind: str, agent_ids: list[int], destination: str) -> None:
        path = Path(destination)
        if kind != FOLDER:
            self.export_agent(path, kind)
            return
        self.saved.emit(f"Exporting memory to {path}…")
        self.jobs.run(
            lambda: export_memory_folder(self.services, agent_ids, path),
            lambda files: self.saved.emit(
                f"Memory saved to the folder {path} ({len(files)} files; README.md says what is where)"
            ),
            self.hub.report,
        )

    @Slot()
    @reports_errors
    def on_export_markdown_triggered(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Export conversation", "conversation.md", "Markdown (*.md)")
        agent_id = self.state.agent_id
        if path and agent_id is not None:
            memory, details = self.services.memory, self.include_details()
            self.jobs.run(
                lambda: _write(Path(path), conversation_markdown(memory, agent_id, include_details=details)),
                lambda _r: self.saved.emit(f"Conversation saved to {path}"),
                self.hub.report,
            )

    @Slot()
    @reports_errors
    def on_export_af_triggered(self) -> None:
        if self.state.agent_id is None:
            return
        name = self.state.agent_name  # the agent shown, as the window names it
        path, _ = QFileDialog.getSaveFileName(self.window, "Export agent", f"{name}.af", "Letta agent file (*.af)")
        if path:
            self.export_agent(Path(path), "af")

    @Slot()
    @reports_errors
    def on_export_json_triggered(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Export agent", "agent.json", "JSON (*.json)")
        if path and self.state.agent_id is not None:
            self.export_agent(Path(path), "json")

    def export_agent(self, path: Path, fmt: str = "json") -> None:
        agent_id = self.state.agent_id
        if agent_id is None:
            return
        services = self.services
        self.jobs.run(
            lambda: export_path(services, agent_id, path, fmt, **(agent_file_options(services) if fmt == "af" else {})),
            lambda _r: self.saved.emit(f"Agent saved to {path}"),
            self.hub.report,
        )

    @Slot()
    @reports_errors
    def on_import_triggered(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self.window, "Import agent", "", "Agent files (*.af *.json);;All files (*)"
        )
        if path:
            self.import_agent(Path(path))

    def import_agent(self, path: Path) -> None:
        """Import in the background (embedding an archive takes a while), then show the summary."""
        self.saved.emit(f"Importing {path.name}…")
        self.jobs.run(lambda: import_agent_path(self.services, path), self.on_imported, self.hub.report)

    @reports_errors
    def on_imported(self, summary: ImportSummary) -> None:
        self.imported.emit(summary)
        self.saved.emit(f"Imported {len(summary.agents)} agent(s)")
        if self.summary_dialog is not None:
            self.summary_dialog.close()
        self.summary_dialog = ImportSummaryDialog(summary, self.window)
        self.summary_dialog.open_requested.connect(self.open_requested)
        self.summary_dialog.tools_requested.connect(self.show_imported_tools)
        self.summary_dialog.show()

    @Slot()
    @reports_errors
    def on_tools_triggered(self) -> None:
        agent_id = self.state.agent_id
        if agent_id is not None:
            self.show_imported_tools(agent_id)

    @Slot(int)
    @reports_errors
    def show_imported_tools(self, agent_id: int) -> None:
        if self.tools_dialog is not None:
            self.tools_dialog.close()
        name = self.services.agents.get(agent_id).name
        self.tools_dialog = ImportedToolsDialog(
            ImportedTools(self.services.db, self.services.clock), agent_id, name, self.window
        )
        self.tools_dialog.tools_changed.connect(self.tools_changed)
        self.tools_dialog.failed.connect(self.hub.report)
        self.tools_dialog.show()

    def close_dialogs(self) -> None:
        for dialog in (self.summary_dialog, self.tools_dialog, self.export_dialog):
            if dialog is not None:
                dialog.close()


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise FileTransferError(
            f"Could not save {path}: {error.strerror or error}", hint="choose another folder, or free some disk space"
        ) from error
