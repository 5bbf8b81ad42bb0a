"""Which of an agent's stored messages the conversation view holds: the newest page when the agent
opens, older pages as the user scrolls up, and every message back to one that must be shown (a
memory change's cause, a fact's source). Opening an agent then reads a page, not the whole
conversation, however long it has grown."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Slot

from memdesk.core.agent.conversation_view import conversation_entries
from memdesk.core.memory.recall import Message, RecallMemory
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.panels.transcript import Transcript

#: Messages read per page: more than a tall window shows (a page renders in about 0.1 s).
PAGE_MESSAGES = 100


class ConversationPages(QObject):
    def __init__(
        self, recall: Callable[[], RecallMemory], transcript: Transcript, page_size: int = PAGE_MESSAGES
    ) -> None:
        super().__init__(transcript)
        self._recall = recall
        self._transcript = transcript
        self.page_size = page_size
        self.agent_id: int | None = None
        self.first_id: int | None = None  # the oldest message the view holds
        transcript.earlier_requested.connect(self.load_earlier)

    def show_newest(self, agent_id: int, agent_name: str, context_start_id: int | None) -> None:
        """The agent's newest page, replacing what the view held (another agent, or a reload)."""
        recall = self._recall()
        page = recall.newest(agent_id, self.page_size)
        self.agent_id = agent_id
        self.first_id = page[0].id if page else None
        self._transcript.set_entries(
            conversation_entries(page), agent_name, context_start_id=context_start_id, has_earlier=self._earlier(page)
        )

    @Slot()
    @reports_errors
    def load_earlier(self) -> None:
        if self.agent_id is None or self.first_id is None or not self._transcript.has_earlier:
            return
        self._prepend(self._recall().newest(self.agent_id, self.page_size, before_id=self.first_id))

    def load_back_to(self, message_id: int) -> None:
        """Every message from ``message_id`` on is in the view (it is older than the page shown)."""
        if self.agent_id is None or self.first_id is None or message_id >= self.first_id:
            return
        self._prepend(self._recall().between(self.agent_id, message_id, self.first_id))

    def _prepend(self, page: list[Message]) -> None:
        if not page:
            self._transcript.prepend([], has_earlier=False)
            return
        self.first_id = page[0].id
        self._transcript.prepend(conversation_entries(page), has_earlier=self._earlier(page))

    def _earlier(self, page: list[Message]) -> bool:
        return bool(page) and self.agent_id is not None and self._recall().any_before(self.agent_id, page[0].id)
