"""The conversation as the window shows it: the transcript's entries for what the user sends, Retry
links, the owed-reply note, and the conversation's state in the window's model (busy, background,
the message sent last, whether Send works yet). Every rule (saving at once, answering, Stop, Retry,
owed replies) is the session's (memdesk.session.session); this module only calls it and shows the
outcome.

Signals:
    turn_done(): a turn ended and what it said is shown
    message_unanswered(int): a user message's turn ended without a reply (its id)
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QStatusBar

from memdesk.core.agent.conversation_view import Entry
from memdesk.core.agent.observer import TurnResult
from memdesk.core.base.clock import Clock
from memdesk.core.base.errors import MemDeskError
from memdesk.core.memory.recall import Message
from memdesk.session.replies import OwedReply
from memdesk.session.sent_before_open import SentBeforeOpen
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.common.text import WILL_BE_ANSWERED
from memdesk.ui.common.window_state import WindowState
from memdesk.ui.panels.chat import ChatPanel
from memdesk.ui.window.transcript_pages import Amendment
from memdesk.ui.workers.session import SessionWorker

NOT_ANSWERED_YET = "not answered yet: the agent answers it once the model has loaded"


class Conversation(QObject):
    turn_done = Signal()
    message_unanswered = Signal(int)

    def __init__(
        self,
        worker: SessionWorker,
        chat: ChatPanel,
        state: WindowState,
        hub: ErrorHub,
        clock: Clock,
        status: QStatusBar,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.session = worker.session
        self.chat, self.state, self.hub, self.clock, self.status = chat, state, hub, clock, status
        worker.busy_changed.connect(self.on_busy_changed)
        worker.background_changed.connect(self.on_background_changed)
        worker.turn_finished.connect(self.on_turn_finished)
        worker.not_answered.connect(self.on_not_answered)
        chat.transcript.retry_requested.connect(self.on_retry_requested)
        chat.send_requested.connect(self.on_send_requested)
        chat.stop_requested.connect(self.on_stop_requested)
        state.events.busy.connect(chat.set_busy)
        state.events.agent_id.connect(self.on_ready_changed)
        state.events.model_ready.connect(self.on_ready_changed)
        self.on_ready_changed()

    # --- the user ----------------------------------------------------------------------------
    @Slot(str)
    @reports_errors
    def on_send_requested(self, text: str) -> None:
        if self.state.agent_id is None or self.state.busy:
            return
        # Saved through the window's own connection before a background turn is cancelled or
        # waited for (the session may take seconds to let go of the model): a crash then keeps it.
        try:
            turn = self.session.send(text)
        except MemDeskError:
            if not self.chat.compose.toPlainText():
                self.chat.compose.setPlainText(text)  # not sent: the user's text is not lost either
            raise
        self.chat.transcript.add(Entry("user", text, turn.message.created_at))
        self._answering(turn.message)

    def _answering(self, message: Message) -> None:
        # Busy until the session says otherwise: no double sends.
        self.state.update(busy=True, last_sent_id=message.id)
        if not self.state.model_ready:
            self.chat.transcript.add(Entry("event", WILL_BE_ANSWERED, message.created_at))

    def deliver_sent_before_open(self, inbox: SentBeforeOpen) -> None:
        """Messages sent in the first window, or left on disk by a start that ended before it could
        save them, are saved to the open agent and answered together (Session.deliver_sent_before_open);
        a store that refuses them reports why and keeps them for the next start."""
        state = self.state
        if state.agent_id is None or state.busy or state.private_chat:
            return
        try:
            delivered = self.session.deliver_sent_before_open(inbox)
        except MemDeskError as error:
            self.hub.report(error)
            return
        for message, text in delivered:
            self.chat.transcript.add(Entry("user", text, message.created_at))
        if delivered:
            self._answering(delivered[-1][0])

    @Slot(int)
    @reports_errors
    def on_retry_requested(self, message_id: int) -> None:
        if self.state.agent_id is None or self.state.busy:
            self.hub.notify("Wait for the current reply (or stop it with Esc), then retry")
            return
        outcome = self.session.retry(message_id)
        if isinstance(outcome, str):
            self.hub.notify(outcome)
            return
        self.state.busy = True
        self.chat.transcript.add(Entry("event", "retrying your message", self.clock.now()))

    @Slot()
    @reports_errors
    def on_stop_requested(self) -> None:
        self.session.stop_by_user()

    @Slot()
    @reports_errors
    def on_escape(self) -> None:
        if self.chat.search_bar.isVisible():
            self.chat.close_search()
        else:
            self.session.stop_by_user()

    # --- replies owed ------------------------------------------------------------------------
    @Slot(int)
    @reports_errors
    def on_not_answered(self, message_id: int) -> None:
        """The turn ended without a reply (stopped, failed, no model): a one-click Retry."""
        self.chat.transcript.add(Entry("unanswered", "not answered", self.clock.now(), message_id=message_id))
        self.message_unanswered.emit(message_id)

    def owed_reply_note(self, agent_id: int) -> Amendment:
        """A message an earlier session left without a reply says so; the session answers it when
        the agent opens, unless its reply was stopped (or failed this session): then Retry. Read
        with the conversation's page, shown below it (transcript_pages.py)."""
        return Amendment(lambda: self.session.owed_reply(agent_id), self._note_owed_reply)

    def _note_owed_reply(self, owed: OwedReply | None) -> None:
        if owed is not None and owed.waits_for_retry:
            entry = Entry("unanswered", "not answered", owed.message.created_at, message_id=owed.message.id)
            self.chat.transcript.add(entry)
        elif owed is not None:
            self.chat.transcript.add(Entry("event", NOT_ANSWERED_YET, owed.message.created_at, message_id=None))

    # --- the session's state -----------------------------------------------------------------
    @Slot(bool)
    @reports_errors
    def on_busy_changed(self, busy: bool) -> None:
        self.state.busy = busy

    @Slot(bool)
    @reports_errors
    def on_background_changed(self, running: bool) -> None:
        self.state.background = running
        if running:
            self.status.showMessage("Thinking in the background… (a message you send goes first)")

    @Slot()
    @reports_errors
    def on_ready_changed(self) -> None:
        # Send works while the model loads: the message is saved at once and answered when it can be.
        if self.state.agent_id is None:
            self.chat.set_ready(False, "")
        elif not self.state.model_ready:
            self.chat.set_ready(True, "loading the model… you can send now")
        else:
            self.chat.set_ready(True, "")

    @Slot(object)
    @reports_errors
    def on_turn_finished(self, result: TurnResult | None) -> None:
        if result is not None:
            self.status.showMessage(f"Last turn: {result.describe()}")
        self.turn_done.emit()
