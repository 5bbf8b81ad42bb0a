"""Which agent the window shows: opening one (its conversation's newest page, the reply it is owed,
the session told), a click in the agents list (refused while a reply runs), the list kept current
after a create, import, rename or delete. The agent shown is the window's state (``agent_id``,
``agent_name``): the panels and the title observe it.

The agent and the list are read off the GUI thread (memdesk/ui/workers/reads.py); the agent is
shown once read, and its conversation's page follows (transcript_pages.py)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Slot

from memdesk.app.services import Services
from memdesk.core.memory.agents import AgentRecord
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.common.window_state import WindowState
from memdesk.ui.panels.agents import AgentsPanel
from memdesk.ui.window.agent_actions import AgentActions
from memdesk.ui.window.conversation import Conversation
from memdesk.ui.window.private_chat import PrivateChat
from memdesk.ui.window.transcript_pages import ConversationPages
from memdesk.ui.window.transfer_actions import TransferActions
from memdesk.ui.workers.reads import Reads
from memdesk.ui.workers.session import SessionWorker

#: Busy is a reply, a retry or the private chat's copy being made: not always a reply Esc can stop.
BUSY = "Wait for the current work to finish (Esc stops a reply) before switching agents"


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
        reads: Reads,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.services, self.state, self.hub, self.worker, self.reads = services, state, hub, worker, reads
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
        """Show this agent (again): its conversation, its memory in the panels; the session opens it.
        The agent and the list are read off the GUI thread, then shown."""
        self.open(agent_id)

    def open(self, agent_id: int, *, by_click: bool = False, then: Callable[[], None] | None = None) -> None:
        """``select``; ``by_click``: the user chose it in the list, refused if a reply started
        meanwhile; ``then`` runs once it is shown (the session has been told)."""
        agents = self.services.agents

        def read() -> tuple[AgentRecord, list[AgentRecord]]:
            return agents.get(agent_id), agents.list()

        def show(found: tuple[AgentRecord, list[AgentRecord]]) -> None:
            record, listed = found
            if by_click and self.state.busy and agent_id != self.state.agent_id:
                self.agents.set_agents(listed, self.state.agent_id)
                self.hub.notify(BUSY)
                return
            self.private_chat.discard()  # another agent, or this one opened again: back to what is saved
            self.agents.set_agents(listed, agent_id)
            self.pages.show_saved(agent_id, amend=self.conversation.owed_reply_note(agent_id))
            # Shown (the title, Send, the panels) and opened in the session once its page and the
            # note are shown: what the user sends and what the session answers come below them.
            self.reads.after(lambda: self._opened(agent_id, record.name, then))

        self.reads.load((self, "agent"), read, show)

    def _opened(self, agent_id: int, name: str, then: Callable[[], None] | None) -> None:
        self.state.update(agent_id=agent_id, agent_name=name)
        self.worker.graph.extract(agent_id)  # catch up on what a closed or crashed app left
        self._note_last_agent(name)
        self.worker.open_agent(agent_id)
        if then is not None:
            then()

    def _note_last_agent(self, name: str) -> None:
        """The agent the next start opens; written in the order shown (the newest choice is kept),
        and one that cannot be written is reported without keeping the agent from opening."""
        settings = self.services.settings_store
        self.reads.load((self, "last agent"), lambda: settings.set("last_agent", name), lambda _settings: None)

    @Slot()
    @reports_errors
    def show_saved_conversation(self) -> None:
        """The conversation's newest page (older ones as the user scrolls up), evicted messages
        included (above a line, the context window)."""
        agent_id = self.pages.agent_asked  # the agent shown, or the one about to be
        if agent_id is not None:
            self.pages.show_saved(agent_id)

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
            self.on_agent_list_changed()  # the list marks the agent shown again
            self.hub.notify(BUSY)
            return
        self.open(agent_id, by_click=True)

    @Slot()
    @reports_errors
    def on_agent_list_changed(self, _record: object = None) -> None:
        self.reads.load((self, "list"), self.services.agents.list, self._show_list)

    def _show_list(self, listed: list[AgentRecord]) -> None:
        self.agents.set_agents(listed, self.state.agent_id)

    @Slot(int, str)
    @reports_errors
    def on_agent_renamed(self, agent_id: int, name: str) -> None:
        if agent_id == self.state.agent_id:
            self._note_last_agent(name)
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
