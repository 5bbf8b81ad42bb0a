"""Which agent the window shows: a click in the agents list (refused while a reply runs), the
list kept current after a create, import, rename or delete, and the title after a rename."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

from memdesk.ui.common.errors import reports_errors

if TYPE_CHECKING:
    from memdesk.ui.window.main_window import MainWindow


class AgentSwitching(QObject):
    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        window.agents.switched.connect(self.on_agent_switched)
        actions = window.agent_actions
        window.agents.create_requested.connect(actions.on_create_requested)
        window.agents.rename_requested.connect(actions.on_rename_requested)
        window.agents.duplicate_requested.connect(actions.on_duplicate_requested)
        window.agents.delete_requested.connect(actions.on_delete_requested)
        actions.open_requested.connect(window.select_agent)
        actions.list_changed.connect(self.on_agent_list_changed)
        actions.renamed.connect(self.on_agent_renamed)
        actions.persona_updated.connect(self.on_persona_updated)
        actions.deleted.connect(window.consent.forget_agent)
        transfers = window.transfer_actions
        transfers.imported.connect(self.on_agent_list_changed)
        transfers.open_requested.connect(self.on_agent_switched)
        transfers.tools_changed.connect(self.on_tools_changed)

    @Slot(int)
    @reports_errors
    def on_agent_switched(self, agent_id: int) -> None:
        window = self.window
        if agent_id == window.agent_id:
            return
        if window.busy:
            window.agents.set_agents(window.services.agents.list(), window.agent_id)
            window.hub.notify("Stop the current reply (Esc) before switching agents")
            return
        window.select_agent(agent_id)

    @Slot()
    @reports_errors
    def on_agent_list_changed(self, _record=None) -> None:
        self.window.agents.set_agents(self.window.services.agents.list(), self.window.agent_id)

    @Slot(int, str)
    @reports_errors
    def on_agent_renamed(self, agent_id: int, name: str) -> None:
        window = self.window
        if agent_id == window.agent_id:
            window.services.settings_store.set("last_agent", name)
            window.chat.title.setText(name)
            window.chat.transcript.agent_name = name
            window.setWindowTitle(f"MemDesk — {name}")

    @Slot(int)
    @reports_errors
    def on_persona_updated(self, agent_id: int) -> None:
        if agent_id == self.window.agent_id:
            self.window.wiring.on_history_reverted(["persona"])

    @Slot(int)
    @reports_errors
    def on_tools_changed(self, agent_id: int) -> None:
        window = self.window
        if agent_id == window.agent_id and not window.busy:
            window.open_agent_requested.emit(agent_id)  # the worker builds the agent's tools again
