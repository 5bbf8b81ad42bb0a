"""The conversation's turns as the user drives them: a message is saved the moment it is sent and
then answered; Stop (the button, Esc) ends a reply and leaves the message "not answered" with Retry;
a message an earlier session left without a reply says so when the agent opens. Also the window's
busy and background state that these follow (see AgentWorker's busy_changed, background_changed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

from memdesk.core.agent import unanswered
from memdesk.core.agent.accept import accept_user_message
from memdesk.core.agent.conversation_view import Entry
from memdesk.core.base.errors import MemDeskError
from memdesk.session.sent_before_open import SentBeforeOpen
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.startup.first_window import WILL_BE_ANSWERED

if TYPE_CHECKING:
    from memdesk.ui.window.main_window import MainWindow

NOT_ANSWERED_YET = "not answered yet: the agent answers it once the model has loaded"


class Conversation(QObject):
    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self._not_answered: set[int] = set()  # messages this session's turns left without a reply (Retry)
        worker, chat = window.worker, window.chat
        worker.busy_changed.connect(self.on_busy_changed)
        worker.background_changed.connect(self.on_background_changed)
        worker.turn_finished.connect(self.on_turn_finished)
        worker.not_answered.connect(self.on_not_answered)
        chat.transcript.retry_requested.connect(self.on_retry_requested)
        chat.send_requested.connect(self.on_send_requested)
        chat.stop_requested.connect(self.on_stop_requested)

    # --- the user ----------------------------------------------------------------------------
    @Slot(str)
    @reports_errors
    def on_send_requested(self, text: str) -> None:
        window = self.window
        if window.agent_id is None or window.busy:
            return
        # Saved through the window's own connection before a background turn is cancelled or
        # waited for (the worker may take seconds to let go of the model): a crash then keeps it.
        try:
            message = accept_user_message(window.private_chat.memory, window.agent_id, text)
        except MemDeskError:
            if not window.chat.compose.toPlainText():
                window.chat.compose.setPlainText(text)  # not sent: the user's text is not lost either
            raise
        window.chat.transcript.add(Entry("user", text, message.created_at))
        self._answer(message)

    def _answer(self, message) -> None:
        window = self.window
        window.busy = True  # until the worker says otherwise: no double sends
        window.chat.set_busy(True)
        window.last_sent_id = message.id
        if not window.is_model_ready:
            window.chat.transcript.add(Entry("event", WILL_BE_ANSWERED, message.created_at))
        window.worker.preempt()  # a background turn must not make the user wait
        window.send_requested.emit(message.id)

    def deliver_sent_before_open(self, inbox: SentBeforeOpen) -> None:
        """Messages sent in the first window, or left on disk by a start that ended before it could
        save them, are saved to the open agent, oldest first, and the newest one's turn answers
        them together (the agent sees them all in its history). Deleted from disk only once all are
        in the store; a store that refuses them reports why and keeps them for the next start."""
        window = self.window
        texts = inbox.texts()
        if not texts or window.agent_id is None or window.busy or window.private_chat.active:
            return
        memory = window.services.memory
        try:
            with memory.db.transaction():  # all or none: a second start must not save one twice
                messages = [accept_user_message(memory, window.agent_id, text) for text in texts]
        except MemDeskError as error:
            window.hub.report(error)
            return
        inbox.clear()
        for message, text in zip(messages, texts):
            window.chat.transcript.add(Entry("user", text, message.created_at))
        self._answer(messages[-1])

    @Slot(int)
    @reports_errors
    def on_retry_requested(self, message_id: int) -> None:
        window = self.window
        if window.agent_id is None or window.busy:
            window.hub.notify("Wait for the current reply (or stop it with Esc), then retry")
            return
        memory = window.private_chat.memory
        message = memory.recall.get(message_id)
        if message is None or message.agent_id != window.agent_id:
            window.hub.notify("That message is not in this conversation")
            return
        if not unanswered.is_unanswered(memory.db, window.agent_id, message_id):
            window.hub.notify("That message has been answered since")
            return
        window.busy = True
        window.chat.set_busy(True)
        window.chat.transcript.add(Entry("event", "retrying your message", window.services.clock.now()))
        window.worker.preempt()
        window.send_requested.emit(message_id)

    @Slot()
    @reports_errors
    def on_stop_requested(self) -> None:
        self.window.worker.stop_by_user()

    @Slot()
    @reports_errors
    def on_escape(self) -> None:
        chat = self.window.chat
        if chat.search_bar.isVisible():
            chat.close_search()
        else:
            self.window.worker.stop_by_user()

    # --- replies owed ------------------------------------------------------------------------
    @Slot(int)
    @reports_errors
    def on_not_answered(self, message_id: int) -> None:
        """The turn ended without a reply (stopped, failed, no model): a one-click Retry."""
        window = self.window
        if not window.private_chat.active:  # a private chat's ids are the copy's, gone with it
            self._not_answered.add(message_id)
        window.chat.transcript.add(
            Entry("unanswered", "not answered", window.services.clock.now(), message_id=message_id)
        )
        window.message_unanswered.emit(message_id)

    def note_owed_reply(self, agent_id: int) -> None:
        """A message an earlier session left without a reply says so; the worker answers it when
        the agent opens (see AgentWorker.answer_owed), unless the user stopped its reply."""
        services = self.window.services
        owed = unanswered.newest(services.db, services.memory.recall, agent_id)
        if owed is not None and (owed.id in self._not_answered or unanswered.was_stopped(services.db, owed.id)):
            # Stopped (this session or an earlier one) or failed this session: the user decides.
            self.window.chat.transcript.add(Entry("unanswered", "not answered", owed.created_at, message_id=owed.id))
        elif owed is not None:
            self.window.chat.transcript.add(Entry("event", NOT_ANSWERED_YET, owed.created_at, message_id=None))

    # --- the worker's state ------------------------------------------------------------------
    @Slot(bool)
    @reports_errors
    def on_busy_changed(self, busy: bool) -> None:
        window = self.window
        window.busy = busy
        window.chat.set_busy(busy)
        if not busy:
            window.heartbeat.restart()

    @Slot(bool)
    @reports_errors
    def on_background_changed(self, running: bool) -> None:
        window = self.window
        window.background = running
        if running:
            window.statusBar().showMessage("Thinking in the background… (a message you send goes first)")
        else:
            window.heartbeat.restart()

    @Slot(object)
    @reports_errors
    def on_turn_finished(self, result) -> None:
        window = self.window
        if result is not None:
            window.statusBar().showMessage(f"Last turn: {result.describe()}")
        window.live_text.end_turn()
        window.archival.refresh()
        window.history.refresh()
        window.turn_done.emit()
