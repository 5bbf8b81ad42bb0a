"""The conversation as the window shows it: the transcript's entries for what the user sends, Retry
links, the owed-reply note and the busy and background state (SessionWorker's busy_changed,
background_changed). Every rule (saving at once, answering, Stop, Retry, owed replies) is the
session's (memdesk.session.session); this module only calls it and shows the outcome."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

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
        worker, chat = window.worker, window.chat
        self.session = worker.session
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
        # waited for (the session may take seconds to let go of the model): a crash then keeps it.
        try:
            turn = self.session.send(text)
        except MemDeskError:
            if not window.chat.compose.toPlainText():
                window.chat.compose.setPlainText(text)  # not sent: the user's text is not lost either
            raise
        window.chat.transcript.add(Entry("user", text, turn.message.created_at))
        self._answering(turn.message)

    def _answering(self, message) -> None:
        window = self.window
        window.busy = True  # until the session says otherwise: no double sends
        window.chat.set_busy(True)
        window.last_sent_id = message.id
        if not window.is_model_ready:
            window.chat.transcript.add(Entry("event", WILL_BE_ANSWERED, message.created_at))

    def deliver_sent_before_open(self, inbox: SentBeforeOpen) -> None:
        """Messages sent in the first window, or left on disk by a start that ended before it could
        save them, are saved to the open agent and answered together (Session.deliver_sent_before_open);
        a store that refuses them reports why and keeps them for the next start."""
        window = self.window
        if window.agent_id is None or window.busy or window.private_chat.active:
            return
        try:
            delivered = self.session.deliver_sent_before_open(inbox)
        except MemDeskError as error:
            window.hub.report(error)
            return
        for message, text in delivered:
            window.chat.transcript.add(Entry("user", text, message.created_at))
        if delivered:
            self._answering(delivered[-1][0])

    @Slot(int)
    @reports_errors
    def on_retry_requested(self, message_id: int) -> None:
        window = self.window
        if window.agent_id is None or window.busy:
            window.hub.notify("Wait for the current reply (or stop it with Esc), then retry")
            return
        outcome = self.session.retry(message_id)
        if isinstance(outcome, str):
            window.hub.notify(outcome)
            return
        window.busy = True
        window.chat.set_busy(True)
        window.chat.transcript.add(Entry("event", "retrying your message", window.services.clock.now()))

    @Slot()
    @reports_errors
    def on_stop_requested(self) -> None:
        self.session.stop_by_user()

    @Slot()
    @reports_errors
    def on_escape(self) -> None:
        chat = self.window.chat
        if chat.search_bar.isVisible():
            chat.close_search()
        else:
            self.session.stop_by_user()

    # --- replies owed ------------------------------------------------------------------------
    @Slot(int)
    @reports_errors
    def on_not_answered(self, message_id: int) -> None:
        """The turn ended without a reply (stopped, failed, no model): a one-click Retry."""
        window = self.window
        window.chat.transcript.add(
            Entry("unanswered", "not answered", window.services.clock.now(), message_id=message_id)
        )
        window.message_unanswered.emit(message_id)

    def note_owed_reply(self, agent_id: int) -> None:
        """A message an earlier session left without a reply says so; the session answers it when
        the agent opens, unless its reply was stopped (or failed this session): then Retry."""
        owed = self.session.owed_reply(agent_id)
        if owed is not None and owed.waits_for_retry:
            entry = Entry("unanswered", "not answered", owed.message.created_at, message_id=owed.message.id)
            self.window.chat.transcript.add(entry)
        elif owed is not None:
            self.window.chat.transcript.add(Entry("event", NOT_ANSWERED_YET, owed.message.created_at, message_id=None))

    # --- the worker's state ------------------------------------------------------------------
    @Slot(bool)
    @reports_errors
    def on_busy_changed(self, busy: bool) -> None:
        window = self.window
        window.busy = busy
        window.chat.set_busy(busy)

    @Slot(bool)
    @reports_errors
    def on_background_changed(self, running: bool) -> None:
        window = self.window
        window.background = running
        if running:
            window.statusBar().showMessage("Thinking in the background… (a message you send goes first)")

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
