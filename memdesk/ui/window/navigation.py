"""Going from what a memory points at to where it is: a change's causing message in the
conversation (loaded however old it is), a block's history, a fact's source message or passage.

The message or passage is read off the GUI thread (memdesk/ui/workers/reads.py); a message older
than the page shown is shown with the page that reaches back to it, scrolled to once that page is
shown (transcript_pages.py)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Slot
from PySide6.QtWidgets import QDockWidget

from memdesk.core.memory.archival import ArchivalMemory, Passage, PassageHit
from memdesk.core.memory.recall import Message, RecallMemory
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.panels.chat import ChatPanel
from memdesk.ui.window.docks import Panels
from memdesk.ui.window.transcript_pages import Amendment, ConversationPages
from memdesk.ui.workers.reads import Reads


class Navigation(QObject):
    def __init__(
        self,
        recall: Callable[[], RecallMemory],
        archival: ArchivalMemory,
        hub: ErrorHub,
        chat: ChatPanel,
        pages: ConversationPages,
        panels: Panels,
        docks: dict[str, QDockWidget],
        reads: Reads,
        parent: QObject | None = None,
        *,
        show_imported: Callable[[int, int], None] | None = None,
    ) -> None:
        """``show_imported(conversation_id, message_id)``: shows a message of an imported
        conversation, which is not in the transcript."""
        super().__init__(parent)
        self._show_imported = show_imported
        self._recall, self._archival, self.reads = recall, archival, reads
        self.hub, self.chat, self.pages, self.docks = hub, chat, pages, docks
        self.history, self.archival = panels.history, panels.archival
        panels.memory.history_requested.connect(self.show_block_history)
        panels.history.show_message_requested.connect(self.show_message)
        panels.knowledge.source_requested.connect(self.on_source_requested)
        chat.message_requested.connect(self.show_message)

    @Slot(str)
    @reports_errors
    def show_block_history(self, label: str) -> None:
        dock = self.docks["Memory history"]
        dock.show()
        dock.raise_()
        self.history.show_block(label)

    @Slot(int)
    @reports_errors
    def show_message(self, message_id: int) -> None:
        """Show a stored message in the conversation, evicted from the context or not."""
        recall = self._recall
        self.reads.load((self, "message"), lambda: recall().get(message_id), self._show_message)

    def _show_message(self, message: Message | None) -> None:
        if message is None or message.agent_id != self.pages.agent_asked:  # the agent shown (or about to be)
            self.hub.notify("That message is not in this agent's conversation")
            return
        if message.conversation_id is not None:  # imported: shown apart from the chat
            if self._show_imported is not None:
                self._show_imported(message.conversation_id, message.id)
            return
        message_id = message.id
        if message.kind == "function_result" and message.step_id is not None:
            message_id = message.step_id  # a result is shown with its call
        if self.chat.transcript.has_message(message_id):
            self._reveal(message_id)
        else:  # older than the page shown, or streamed this session (such entries carry no ids yet)
            reveal = Amendment(lambda: None, lambda _nothing: self._reveal(message_id))
            self.pages.show_saved(message.agent_id, back_to=message_id, amend=reveal)

    def _reveal(self, message_id: int) -> None:
        transcript = self.chat.transcript
        if transcript.needs_details(message_id):
            self.chat.details.setChecked(True)
        if not transcript.scroll_to_message(message_id):
            self.hub.notify("That message is hidden in the conversation view")

    @Slot(str, int)
    @reports_errors
    def on_source_requested(self, kind: str, source_id: int) -> None:
        """A fact's source: the message in the conversation, or the passage in archival memory."""
        if kind == "message":
            self.show_message(source_id)
            return
        archival = self._archival
        self.reads.load((self, "passage"), lambda: archival.get(source_id), self._show_passage)

    def _show_passage(self, passage: Passage | None) -> None:
        if passage is not None:
            self.archival.show_hits([("graph source", PassageHit(passage, 0.0))])
            self.archival.hits_table.selectRow(0)
            self.docks["Archival memory"].raise_()
