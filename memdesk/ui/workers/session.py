"""The window's adapter over the session layer (memdesk.session): a QObject in the GUI thread whose
signals re-emit what the session reports (on the session's own threads, so every receiver in the GUI
thread gets them queued) and whose slots call the session, which returns at once. The rules of the
conversation are the session's; this module only carries them across threads.

Signals:
    loading(str), ready(str): the model is being loaded (its description), is loaded (its id)
    streamed(str, str): a piece of "thought" or "message" text while it is generated
    stepped(object): a StepRecord after each saved step
    budget_changed(object): a ContextBudget
    memory_changed(list): labels of core memory blocks the agent (or a pass) edited
    search_hits(list): the agent's latest search hits, [(kind, hit)]
    agent_event(str, str): a quiet system event (kind, text)
    failed(object): an exception for the error bar
    busy_changed(bool): work the user waits for started or ended
    background_changed(bool): a turn nobody asked for started or ended (a message preempts it)
    turn_finished(object): a TurnResult, or None
    agent_opened(int): the agent is ready to talk
    switch_finished(bool, object): (True, the new Settings) or (False, the error)
    consolidation_finished(object): a consolidation PassResult
    private_started(object): a private chat began on these Services (the session closes them)
    not_answered(int): a user message's turn ended without a reply: its id, for Retry
    retention_waits(int, str): an agent's retention policy nobody confirmed is due: what it removes
    retention_done(int, int): retention forgot this many old messages of the agent
    import_progress(object): an import of another assistant's conversations moved on (ImportProgress)
    import_finished(int, int, int): an import finished: (agent, import, proposals waiting for review)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal, Slot

from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import CancelToken, Runtime
from memdesk.core.transfer.history.preview import Selection
from memdesk.session.listener import SessionListener
from memdesk.session.session import Session
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.workers.graph import GraphSignals


class SessionWorker(QObject):
    loading = Signal(str)
    ready = Signal(str)
    streamed = Signal(str, str)
    stepped = Signal(object)
    budget_changed = Signal(object)
    memory_changed = Signal(list)
    search_hits = Signal(list)
    agent_event = Signal(str, str)
    failed = Signal(object)
    busy_changed = Signal(bool)
    background_changed = Signal(bool)
    turn_finished = Signal(object)
    agent_opened = Signal(int)
    switch_finished = Signal(bool, object)
    consolidation_finished = Signal(object)
    private_started = Signal(object)
    not_answered = Signal(int)
    retention_waits = Signal(int, str)
    retention_done = Signal(int, int)
    import_progress = Signal(object)
    import_finished = Signal(int, int, int)

    def __init__(self, build: Callable[[SessionListener], Session], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.graph = GraphSignals(self)
        self.session = build(_Relay(self, self.graph))
        self.graph.session = self.session
        self.closed = False

    def start(self) -> None:
        self.session.start()

    # --- called from the GUI thread (all return at once) ---------------------------------------
    @property
    def runtime(self) -> Runtime | None:
        return self.session.runtime

    @property
    def cancel_token(self) -> CancelToken:
        return self.session.cancel_token

    def stop(self) -> None:
        self.session.stop()

    def stop_by_user(self) -> None:
        self.session.stop_by_user()

    @Slot(object)
    @reports_errors
    def load_model(self, settings: Settings) -> None:
        self.session.load_model(settings)

    @Slot(object)
    @reports_errors
    def switch_model(self, settings: Settings) -> None:
        self.session.switch_model(settings)

    @Slot(object)
    @reports_errors
    def apply_settings(self, settings: Settings) -> None:
        self.session.apply_settings(settings)

    @Slot(int)
    @reports_errors
    def open_agent(self, agent_id: int) -> None:
        self.session.open_agent(agent_id)

    @Slot(int)
    @reports_errors
    def start_private(self, agent_id: int) -> None:
        self.session.start_private(agent_id)

    @Slot()
    @reports_errors
    def end_private(self) -> None:
        self.session.end_private()

    @Slot()
    @reports_errors
    def heartbeat(self) -> None:
        self.session.heartbeat()

    @Slot()
    @reports_errors
    def consolidate(self) -> None:
        self.session.consolidate()

    @Slot()
    @reports_errors
    def refresh_budget(self) -> None:
        self.session.refresh_budget()

    def import_history(self, agent_id: int, path: Path, selection: Selection, totals: tuple[int, int]) -> None:
        """Raises PrivateChatRefusal during a private chat (the caller shows it)."""
        self.session.import_history(agent_id, path, selection, totals)

    @Slot()
    @reports_errors
    def pause_import(self) -> None:
        self.session.pause_import()

    def resume_import(self, import_id: int) -> None:
        self.session.resume_import(import_id)

    def close(self, timeout_s: float) -> list[threading.Thread]:
        """Close the session: the threads still running after ``timeout_s`` each (left to finish)."""
        self.closed = True
        self.session.close(timeout_s)
        return [thread for thread in self.session.threads() if thread.is_alive()]


#: Seconds between two progress reports of an import the window is sent (it reports each
#: conversation: hundreds a second would be events the GUI thread only paints over).
IMPORT_PROGRESS_EVERY = 0.1


class _Relay(SessionListener):
    """The session's callbacks as the worker's signals (emitted on the session's threads)."""

    def __init__(self, worker: SessionWorker, graph: GraphSignals) -> None:
        self._worker, self._graph = worker, graph
        self._progress_at = 0.0

    def on_loading(self, what):
        self._worker.loading.emit(what)

    def on_ready(self, model_id):
        self._worker.ready.emit(model_id)

    def on_switch_finished(self, ok, detail):
        self._worker.switch_finished.emit(ok, detail)

    def on_agent_opened(self, agent_id):
        self._worker.agent_opened.emit(agent_id)

    def on_private_started(self, services):
        self._worker.private_started.emit(services)

    def on_streamed(self, kind, text):
        self._worker.streamed.emit(kind, text)

    def on_step(self, step):
        self._worker.stepped.emit(step)

    def on_budget(self, budget):
        self._worker.budget_changed.emit(budget)

    def on_memory_changed(self, labels):
        self._worker.memory_changed.emit(list(labels))

    def on_search_hits(self, hits):
        self._worker.search_hits.emit(list(hits))

    def on_event(self, kind, text):
        self._worker.agent_event.emit(kind, text)

    def on_failed(self, error):
        self._worker.failed.emit(error)

    def on_busy(self, busy):
        self._worker.busy_changed.emit(busy)

    def on_background(self, running):
        self._worker.background_changed.emit(running)

    def on_turn_finished(self, result):
        self._worker.turn_finished.emit(result)

    def on_not_answered(self, message_id):
        self._worker.not_answered.emit(message_id)

    def on_consolidation_finished(self, result):
        self._worker.consolidation_finished.emit(result)

    def on_retention_waits(self, agent_id, description):
        self._worker.retention_waits.emit(agent_id, description)

    def on_retention_done(self, agent_id, removed):
        self._worker.retention_done.emit(agent_id, removed)

    def on_import_progress(self, progress):
        now = time.monotonic()
        if progress.status == "running" and now - self._progress_at < IMPORT_PROGRESS_EVERY:
            return  # a newer one follows; a stop or the end is always sent
        self._progress_at = now
        self._worker.import_progress.emit(progress)

    def on_import_finished(self, agent_id, import_id, proposals):
        self._worker.import_finished.emit(agent_id, import_id, proposals)

    def on_graph_changed(self, agent_id):
        self._graph.changed.emit(agent_id)

    def on_graph_pending(self, agent_id, entities, facts):
        self._graph.pending.emit(agent_id, entities, facts)

    def on_graph_failed(self, error):
        self._graph.failed.emit(error)
