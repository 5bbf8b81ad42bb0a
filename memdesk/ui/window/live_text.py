"""What the agent says while it works: streamed text painted at ~30 Hz however fast tokens arrive,
then each finished step, event and recalled memory as a transcript entry."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Slot

from memdesk.core.agent.conversation_view import Entry, event_entry
from memdesk.core.agent.observer import StepRecord
from memdesk.core.agent.repetition import REPEATED
from memdesk.core.base.clock import Clock
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.panels.budget import BudgetPanel
from memdesk.ui.panels.transcript import Transcript
from memdesk.ui.workers.session import SessionWorker

REPAINT_MS = 33  # streamed text is painted at ~30 Hz, however fast tokens arrive


class LiveText(QObject):
    def __init__(
        self, worker: SessionWorker, transcript: Transcript, budget: BudgetPanel, clock: Clock, parent: QObject
    ) -> None:
        super().__init__(parent)
        self._transcript = transcript
        self._budget = budget
        self._clock = clock
        self._streamed_chars = 0
        self._dirty = False
        self.timer = QTimer(self)
        self.timer.setInterval(REPAINT_MS)
        self.timer.timeout.connect(self.on_repaint_tick)
        worker.streamed.connect(self.on_streamed)
        worker.stepped.connect(self.on_step)
        worker.agent_event.connect(self.on_agent_event)
        worker.turn_finished.connect(self.on_turn_finished)

    def start(self) -> None:
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    @Slot(object)
    @reports_errors
    def on_turn_finished(self, _result: object) -> None:
        self._transcript.end_live()
        self._streamed_chars = 0

    @Slot(str, str)
    @reports_errors
    def on_streamed(self, kind: str, text: str) -> None:
        self._transcript.append_live(kind, text)
        self._streamed_chars += len(text)
        self._dirty = True

    @Slot()
    @reports_errors
    def on_repaint_tick(self) -> None:
        if self._dirty:
            self._dirty = False
            self._transcript.update_live()
            self._budget.set_streamed(self._streamed_chars)

    @Slot(object)
    @reports_errors
    def on_step(self, step: StepRecord) -> None:
        now = self._clock.now()
        self._dirty = False
        self._streamed_chars = 0
        transcript = self._transcript
        transcript.end_live()
        if step.thoughts:
            transcript.add(Entry("thought", step.thoughts, now))
        if step.ok and step.function == "send_message":
            transcript.add(Entry("agent", str(step.arguments.get("message", "")), now, function=step.function))
        else:
            transcript.add(
                Entry(
                    "call",
                    step.raw,
                    now,
                    function=step.function,
                    arguments=dict(step.arguments),
                    result=step.result,
                    ok=step.ok,
                )
            )

    @Slot(str, str)
    @reports_errors
    def on_agent_event(self, kind: str, text: str) -> None:
        if kind == REPEATED:  # the copy streamed so far is not the reply: the next generation is
            self._transcript.end_live()
            self._streamed_chars = 0
        if kind == "memories":  # automatic recall: shown with the inner workings, as on reload
            self._transcript.add(Entry("memories", text, self._clock.now()))
            return
        self._transcript.add(event_entry(kind, text, self._clock.now()))
