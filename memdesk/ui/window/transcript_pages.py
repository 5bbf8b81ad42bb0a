"""Which of an agent's stored messages the conversation view holds: the newest page when the agent
opens, older pages as the user scrolls up, and every message back to one that must be shown (a
memory change's cause, a fact's source). Opening an agent then reads a page, not the whole
conversation, however long it has grown.

Pages are read off the GUI thread (memdesk/ui/workers/reads.py) and shown in the order asked. What
amends a page once it is shown (the note on a reply the agent still owes, scrolling to a message)
is read with it and shown right after it (``Amendment``): never on another page, never before it.
A page asked for replaces one still being read (the newest wins); an earlier page is shown only
above the page it was asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from PySide6.QtCore import QObject, Slot

from memdesk.core.agent.conversation_view import Entry, conversation_entries
from memdesk.core.memory.recall import Message, RecallMemory
from memdesk.core.memory.services import MemoryServices
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.panels.transcript import Transcript
from memdesk.ui.workers.reads import Reads

#: Messages read per page: more than a tall window shows (a page renders in about 0.1 s).
PAGE_MESSAGES = 100
#: How often a page is read again when the view changed while it was read (a message the user
#: sent meanwhile): it is then read again, so that what the user just sent is not replaced.
REREADS = 3


@dataclass(frozen=True)
class Amendment:
    """What is added to a page once it is shown: ``read`` runs off the GUI thread with the page's
    read (after it), ``show`` gets its result in the GUI thread right after the page is shown."""

    read: Callable[[], Any]
    show: Callable[[Any], None]


@dataclass(frozen=True)
class Page:
    """A page of an agent's conversation as read: its entries and what the view needs to draw them."""

    agent_id: int
    agent_name: str
    context_start_id: int | None
    entries: list[Entry]
    first_id: int | None  # the oldest message of the page
    has_earlier: bool
    amended: Any = None  # what the amendment's read returned


class ConversationPages(QObject):
    def __init__(
        self,
        memory: Callable[[], MemoryServices],
        reads: Reads,
        transcript: Transcript,
        page_size: int = PAGE_MESSAGES,
    ) -> None:
        super().__init__(transcript)
        self._memory, self._reads, self._transcript = memory, reads, transcript
        self.page_size = page_size
        self.agent_id: int | None = None  # whose conversation the view holds
        self.agent_asked: int | None = None  # whose conversation the view holds once what was asked is shown
        self.first_id: int | None = None  # the oldest message the view holds
        transcript.earlier_requested.connect(self.load_earlier)

    # --- the whole view ----------------------------------------------------------------------
    def show_saved(self, agent_id: int, *, back_to: int | None = None, amend: Amendment | None = None) -> None:
        """The agent's newest page (from ``back_to`` on, if that message is older), replacing what
        the view holds (another agent, or a reload), then ``amend``."""
        self._ask(agent_id, back_to, amend, REREADS)

    def _ask(self, agent_id: int, back_to: int | None, amend: Amendment | None, rereads: int) -> None:
        self.agent_asked = agent_id
        view = self._view()

        def read() -> Page:
            page = self.read_page(agent_id, back_to)
            return page if amend is None else replace(page, amended=amend.read())

        def show(page: Page) -> None:
            if self._view() != view and rereads > 0:  # added to meanwhile: read what it holds now
                self._ask(agent_id, back_to, amend, rereads - 1)
                return
            self._show(page)
            if amend is not None:
                amend.show(page.amended)

        self._reads.load((self, "page"), read, show)

    def read_page(self, agent_id: int, back_to: int | None = None) -> Page:
        """Off the GUI thread: the newest page, extended back to ``back_to``."""
        memory = self._memory()
        record = memory.agents.get(agent_id)
        messages = memory.recall.newest(agent_id, self.page_size)
        if back_to is not None and messages and back_to < messages[0].id:
            messages = memory.recall.between(agent_id, back_to, messages[0].id) + messages
        return Page(
            agent_id,
            record.name,
            record.context_start_id,
            conversation_entries(messages),
            messages[0].id if messages else None,
            _earlier(memory.recall, agent_id, messages),
        )

    def _show(self, page: Page) -> None:
        self.agent_id, self.first_id = page.agent_id, page.first_id
        self._transcript.set_entries(
            page.entries, page.agent_name, context_start_id=page.context_start_id, has_earlier=page.has_earlier
        )

    def _view(self) -> tuple[int, int]:
        """What the view holds, to tell whether it changed (replaced, or an entry added)."""
        return id(self._transcript.entries), len(self._transcript.entries)

    # --- earlier pages -------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def load_earlier(self) -> None:
        agent_id, first_id = self.agent_id, self.first_id
        if agent_id is None or first_id is None or not self._transcript.has_earlier:
            return

        def read() -> tuple[list[Entry], int | None, bool]:
            recall = self._memory().recall
            messages = recall.newest(agent_id, self.page_size, before_id=first_id)
            return (
                conversation_entries(messages),
                messages[0].id if messages else None,
                _earlier(recall, agent_id, messages),
            )

        def show(earlier: tuple[list[Entry], int | None, bool]) -> None:
            if (self.agent_id, self.first_id) != (agent_id, first_id):
                return  # the view was replaced meanwhile: this page belongs above another one
            entries, oldest, has_earlier = earlier
            if oldest is not None:
                self.first_id = oldest
            self._transcript.prepend(entries, has_earlier=has_earlier)

        self._reads.load((self, "earlier"), read, show)


def _earlier(recall: RecallMemory, agent_id: int, page: list[Message]) -> bool:
    return bool(page) and recall.any_before(agent_id, page[0].id)
