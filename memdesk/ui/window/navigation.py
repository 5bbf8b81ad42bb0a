"""Going from what a memory points at to where it is: a change's causing message in the
conversation (loaded however old it is), a block's history, a fact's source message or passage."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

from memdesk.core.memory.archival import PassageHit
from memdesk.ui.common.errors import reports_errors

if TYPE_CHECKING:
    from memdesk.ui.window.main_window import MainWindow


class Navigation(QObject):
    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        window.memory.history_requested.connect(self.show_block_history)
        window.history.show_message_requested.connect(self.show_message)
        window.knowledge.source_requested.connect(self.on_source_requested)
        window.chat.message_requested.connect(self.show_message)

    @Slot(str)
    @reports_errors
    def show_block_history(self, label: str) -> None:
        dock = self.window.docks["Memory history"]
        dock.show()
        dock.raise_()
        self.window.history.show_block(label)

    @Slot(int)
    @reports_errors
    def show_message(self, message_id: int) -> None:
        """Show a stored message in the conversation, evicted from the context or not."""
        window = self.window
        message = window.services.memory.recall.get(message_id)
        if message is None or message.agent_id != window.agent_id:
            window.hub.notify("That message is not in this agent's conversation")
            return
        if message.kind == "function_result" and message.step_id is not None:
            message_id = message.step_id  # a result is shown with its call
        transcript = window.chat.transcript
        if not transcript.has_message(message_id):
            window.load_transcript(message.agent_id)  # entries streamed this session carry no ids yet
            window.pages.load_back_to(message_id)  # older than the page shown
        if transcript.needs_details(message_id):
            window.chat.details.setChecked(True)
        if not transcript.scroll_to_message(message_id):
            window.hub.notify("That message is hidden in the conversation view")

    @Slot(str, int)
    @reports_errors
    def on_source_requested(self, kind: str, source_id: int) -> None:
        """A fact's source: the message in the conversation, or the passage in archival memory."""
        if kind == "message":
            self.show_message(source_id)
            return
        window = self.window
        passage = window.services.memory.archival.get(source_id)
        if passage is not None:
            window.archival.show_hits([("graph source", PassageHit(passage, 0.0))])
            window.archival.hits_table.selectRow(0)
            window.docks["Archival memory"].raise_()
