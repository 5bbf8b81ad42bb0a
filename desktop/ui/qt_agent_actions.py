"""What the user can do to agents (create, rename, duplicate, delete): the dialogs that ask, the
store calls that do it (the slow copy on the job pool), and signals telling the window what to show.
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QInputDialog, QMessageBox, QWidget

from desktop.app import Services
from desktop.core.agent import transfer
from desktop.ui.qt_agents import CreateAgentDialog
from desktop.ui.qt_errors import ErrorHub, reports_errors
from desktop.ui.qt_jobs import Jobs
from desktop.ui.qt_text import literal

DEFAULT_AGENT = "Companion"


class WindowState(Protocol):
    """What the actions need to know about the window: the open agent and whether it is replying."""

    agent_id: int | None
    busy: bool


class AgentActions(QObject):
    """Create in the GUI thread; ``window`` parents the dialogs.

    Signals:
        open_requested(int): make this agent the open one
        list_changed(): agents were added, renamed or removed; show the list again
        renamed(int, str): an agent's new name
        deleted(int): this agent is gone (what was remembered for it must go too)
    """

    open_requested = Signal(int)
    list_changed = Signal()
    renamed = Signal(int, str)
    deleted = Signal(int)

    def __init__(self, services: Services, jobs: Jobs, hub: ErrorHub, window: QWidget, state: WindowState) -> None:
        super().__init__(window)
        self.services = services
        self.jobs = jobs
        self.hub = hub
        self.window = window
        self.state = state

    # --- asking ------------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_create_requested(self) -> None:
        dialog = CreateAgentDialog(self.services.prompts, self.window)
        if dialog.exec():
            self.create(*dialog.values())

    @Slot(int)
    @reports_errors
    def on_rename_requested(self, agent_id: int) -> None:
        current = self.services.agents.get(agent_id).name
        name, ok = QInputDialog.getText(self.window, "Rename agent", "New name:", text=current)
        if ok and name.strip():
            self.rename(agent_id, name)

    @Slot(int)
    @reports_errors
    def on_duplicate_requested(self, agent_id: int) -> None:
        source = self.services.agents.get(agent_id).name
        name, ok = QInputDialog.getText(self.window, "Duplicate agent", "Name of the copy:", text=f"{source} copy")
        if ok and name.strip():
            self.duplicate(agent_id, name)

    @Slot(int)
    @reports_errors
    def on_delete_requested(self, agent_id: int) -> None:
        name = self.services.agents.get(agent_id).name
        answer = QMessageBox.question(
            self.window, "Delete agent", literal(f"Delete {name} with its whole conversation, memory and documents? This cannot be undone.")
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.delete(agent_id)

    # --- doing -------------------------------------------------------------------------------
    def create(self, name: str, persona: str = "", human: str = "") -> None:
        try:
            record = self.services.create_agent(name, persona=persona or None, human=human or None)
        except Exception as error:  # noqa: BLE001 - every failure goes to the message bar
            self.hub.report(error)
            return
        if self.state.busy:
            self.list_changed.emit()
        else:
            self.open_requested.emit(record.id)

    def rename(self, agent_id: int, name: str) -> None:
        try:
            record = self.services.agents.rename(agent_id, name)
        except Exception as error:  # noqa: BLE001
            self.hub.report(error)
            return
        self.renamed.emit(agent_id, record.name)
        self.list_changed.emit()

    def duplicate(self, agent_id: int, name: str) -> None:
        self.jobs.run(lambda: transfer.duplicate_agent(self.services, agent_id, name), lambda _record: self.list_changed.emit(), self.hub.report)

    def delete(self, agent_id: int) -> None:
        if agent_id == self.state.agent_id and self.state.busy:
            self.hub.notify("Stop the current reply (Esc) before deleting this agent")
            return
        self.services.agents.delete(agent_id)
        self.deleted.emit(agent_id)
        if agent_id != self.state.agent_id:
            self.list_changed.emit()
            return
        remaining = self.services.agents.list() or [self.services.create_agent(DEFAULT_AGENT)]
        self.open_requested.emit(remaining[0].id)

    def ensure_one(self, last_name: str) -> int:
        """The agent to open at start-up: the last one used, else the first, else a new one."""
        agents = self.services.agents.list() or [self.services.create_agent(DEFAULT_AGENT)]
        return next((a for a in agents if a.name == last_name), agents[0]).id
