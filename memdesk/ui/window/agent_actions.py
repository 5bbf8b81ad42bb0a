"""What the user can do to agents (create, rename, duplicate, delete): the dialogs that ask, the
store calls that do it (the slow copy on the job pool), and signals telling the window what to show.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QInputDialog, QMessageBox, QWidget

from memdesk.app.services import Services
from memdesk.core.memory.agents import FIRST_AGENT
from memdesk.core.prompts import renamed_persona
from memdesk.core.transfer import memdesk_json
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.common.text import literal
from memdesk.ui.common.window_state import WindowState
from memdesk.ui.panels.agents import CreateAgentDialog
from memdesk.ui.workers.jobs import Jobs

DEFAULT_AGENT = FIRST_AGENT


class AgentActions(QObject):
    """Create in the GUI thread; ``window`` parents the dialogs, ``state`` says which agent is open
    and whether it is replying.

    Signals:
        open_requested(int): make this agent the open one
        list_changed(): agents were added, renamed or removed; show the list again
        renamed(int, str): an agent's new name
        persona_updated(int): the agent's persona now uses its new name (show the block again)
        deleted(int): this agent is gone (what was remembered for it must go too)

    ``confirm_persona_update(name, before, after) -> bool`` asks whether a renamed agent's persona
    should use the new name (a dialog; tests and scripts replace it).
    """

    open_requested = Signal(int)
    list_changed = Signal()
    renamed = Signal(int, str)
    persona_updated = Signal(int)
    deleted = Signal(int)

    def __init__(self, services: Services, jobs: Jobs, hub: ErrorHub, window: QWidget, state: WindowState) -> None:
        super().__init__(window)
        self.services = services
        self.jobs = jobs
        self.hub = hub
        self.window = window
        self.state = state
        self.confirm_persona_update: Callable[[str, str, str], bool] = self._ask_persona_update

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
            self.window,
            "Delete agent",
            literal(f"Delete {name} with its whole conversation, memory and documents? This cannot be undone."),
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

    def rename(self, agent_id: int, name: str, *, update_persona: bool | None = None) -> None:
        """``update_persona``: None asks (``confirm_persona_update``) when the persona uses the old name."""
        try:
            old_name = self.services.agents.get(agent_id).name
            record = self.services.agents.rename(agent_id, name)
        except Exception as error:  # noqa: BLE001
            self.hub.report(error)
            return
        self.renamed.emit(agent_id, record.name)
        self.list_changed.emit()
        if update_persona is not False:
            self._offer_persona_update(agent_id, old_name, record.name, ask=update_persona is None)

    def _offer_persona_update(self, agent_id: int, old_name: str, new_name: str, *, ask: bool) -> None:
        """A persona that still says "My name is <old name>" would contradict the new name; the
        user decides (the persona may be a character they wrote on purpose)."""
        block = self.services.memory.core.get(agent_id, "persona")
        if block is None:
            return
        after = renamed_persona(block.value, old_name, new_name)
        if after is None or (ask and not self.confirm_persona_update(new_name, block.value, after)):
            return
        try:
            self.services.memory.core.set_value(agent_id, "persona", after, expected_version=block.version)
        except Exception as error:  # noqa: BLE001 - the agent edited it meanwhile: say so, keep its text
            self.hub.report(error)
            return
        self.persona_updated.emit(agent_id)

    def _ask_persona_update(self, name: str, before: str, after: str) -> bool:
        answer = QMessageBox.question(
            self.window,
            "Update the persona?",
            literal(f"The persona still uses the old name. Change it to {name}?\n\nIt would read:\n{after}"),
        )
        return answer == QMessageBox.StandardButton.Yes

    def duplicate(self, agent_id: int, name: str) -> None:
        self.jobs.run(
            lambda: memdesk_json.duplicate_agent(self.services, agent_id, name),
            lambda _record: self.list_changed.emit(),
            self.hub.report,
        )

    def delete(self, agent_id: int) -> None:
        shown = agent_id == self.state.agent_id
        if shown and self.state.busy:
            self.hub.notify("Stop the current reply (Esc) before deleting this agent")
            return
        self.services.agents.delete(agent_id)
        self.deleted.emit(agent_id)
        if not shown:
            self.list_changed.emit()
            return
        remaining = self.services.agents.list() or [self.services.create_agent(DEFAULT_AGENT)]
        self.open_requested.emit(remaining[0].id)

    def ensure_one(self, last_name: str) -> int:
        """The agent to open at start-up: the last one used, else the first, else a new one."""
        agents = self.services.agents.list() or [self.services.create_agent(DEFAULT_AGENT)]
        return next((a for a in agents if a.name == last_name), agents[0]).id
