"""Which agent the window shows: opening one (its conversation's newest page, the reply it is owed,
the session told), a click in the agents list (refused while a reply runs), the list kept current
after a create, import, rename or delete. The agent shown is the window's state (``agent_id``,
``agent_name``): the panels and the title observe it."""

from __future__ import annotations

from PySide6.QtCore import QObject, Slot

from memdesk.app.services import Services
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.common.window_state import WindowState
from memdesk.ui.panels.agents import AgentsPanel
from memdesk.ui.window.agent_actions import AgentActions
from memdesk.ui.window.conversation import Conversation
from memdesk.ui.window.private_chat import PrivateChat
from memdesk.ui.window.transcript_pages import ConversationPages
from memdesk.ui.window.transfer_actions import TransferActions
from memdesk.ui.workers.session import SessionWorker


class AgentSwitching(QObject):
    def __init__(
        self,
        services: Services,
        state: WindowState,
        hub: ErrorHub,
        worker: SessionWorker,
        agents: AgentsPanel,
        pages: ConversationPages,
        conversation: Conversation,
        private_chat: PrivateChat,
        actions: AgentActions,
        transfers: TransferActions,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.services, self.state, self.hub, self.worker = services, state, hub, worker
        self.agents, self.pages, self.conversation, self.private_chat = agents, pages, conversation, private_chat
        agents.switched.connect(self.on_agent_switched)
        agents.create_requested.connect(actions.on_create_requested)
        agents.rename_requested.connect(actions.on_rename_requested)
        agents.duplicate_requested.connect(actions.on_duplicate_requested)
        agents.delete_requested.connect(actions.on_delete_requested)
        actions.open_requested.connect(self.select)
        actions.list_changed.connect(self.on_agent_list_changed)
        actions.renamed.connect(self.on_agent_renamed)
        actions.deleted.connect(self.on_agent_deleted)
        transfers.imported.connect(self.on_agent_list_changed)
        transfers.open_requested.connect(self.on_agent_switched)
        transfers.tools_changed.connect(self.on_tools_changed)
        private_chat.ended.connect(self.show_saved_conversation)

    @Slot(int)
    @reports_errors
    def select(self, agent_id: int) -> None:
        """Show this agent (again): its conversation, its memory in the panels; the session opens it."""
        record = self.services.agents.get(agent_id)
        self.private_chat.discard()  # another agent, or this one opened again: back to what is saved
        self.agents.set_agents(self.services.agents.list(), agent_id)
        self.state.update(agent_id=agent_id, agent_name=record.name)
        self.show_saved_conversation()
        self.conversation.note_owed_reply(agent_id)
        self.worker.graph.extract(agent_id)  # catch up on what a closed or crashed app left
        self.services.settings_store.set("last_agent", record.name)
        self.worker.open_agent(agent_id)

    @Slot()
    @reports_errors
    def show_saved_conversation(self) -> None:
        """The conversation's newest page (older ones as the user scrolls up), evicted messages
        included (above a line, the context window)."""
        agent_id = self.state.agent_id
        if agent_id is not None:
            record = self.services.agents.get(agent_id)
            self.pages.show_newest(agent_id, record.name, record.context_start_id)

    def user_renamed(self) -> None:
        """The user's name was set: the knowledge graph's entity for the user takes it now."""
        if self.state.agent_id is not None:
            self.worker.graph.extract(self.state.agent_id)

    @Slot(int)
    @reports_errors
    def on_agent_switched(self, agent_id: int) -> None:
        if agent_id == self.state.agent_id:
            return
        if self.state.busy:
            self.agents.set_agents(self.services.agents.list(), self.state.agent_id)
            self.hub.notify("Stop the current reply (Esc) before switching agents")
            return
        self.select(agent_id)

    @Slot()
    @reports_errors
    def on_agent_list_changed(self, _record: object = None) -> None:
        self.agents.set_agents(self.services.agents.list(), self.state.agent_id)

    @Slot(int, str)
    @reports_errors
    def on_agent_renamed(self, agent_id: int, name: str) -> None:
        if agent_id == self.state.agent_id:
            self.services.settings_store.set("last_agent", name)
            self.state.agent_name = name

    @Slot(int)
    @reports_errors
    def on_agent_deleted(self, agent_id: int) -> None:
        if agent_id == self.state.agent_id:
            # Nothing of it is shown any more (a new agent may even take its id).
            self.state.update(agent_id=None, agent_name="")

    @Slot(int)
    @reports_errors
    def on_forgotten(self, agent_id: int) -> None:
        """What the conversation shows was read before the removal."""
        if agent_id == self.state.agent_id and not self.state.busy:
            self.show_saved_conversation()

    @Slot(int)
    @reports_errors
    def on_tools_changed(self, agent_id: int) -> None:
        if agent_id == self.state.agent_id and not self.state.busy:
            self.worker.open_agent(agent_id)  # the session builds the agent's tools again
