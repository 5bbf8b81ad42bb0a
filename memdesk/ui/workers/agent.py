"""The agent worker: a QObject living in its own QThread that owns the model runtime, the agent and
the store connection they write through. The window talks to it only through queued signals; the
exceptions are ``stop()`` and ``stop_by_user()``, which set a thread-safe cancel token.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from memdesk.app.agents import open_agent, open_consolidator
from memdesk.app.local_model import resolve_model_path
from memdesk.app.services import Services, open_private_services
from memdesk.core.agent import unanswered
from memdesk.core.agent.context import ContextBudget
from memdesk.core.agent.loop import Agent
from memdesk.core.agent.observer import AgentObserver, StepRecord
from memdesk.core.base.errors import GenerationCancelled, ModelError
from memdesk.core.base.settings_table import Settings
from memdesk.core.models.preflight import explain_load_failure
from memdesk.core.runtime.base import CancelToken, Runtime, StreamEvent
from memdesk.core.runtime.warmup import Warmup
from memdesk.core.tools.context import ConsentPolicy

log = logging.getLogger("memdesk.ui.worker")


class _SignalObserver(AgentObserver):
    """Turns the agent's callbacks (made in the worker thread) into the worker's signals."""

    def __init__(self, worker: AgentWorker) -> None:
        self._worker = worker

    def on_stream(self, event: StreamEvent) -> None:
        self._worker.streamed.emit(event.kind, event.text)

    def on_step(self, step: StepRecord) -> None:
        self._worker.stepped.emit(step)

    def on_budget(self, budget: ContextBudget) -> None:
        self._worker.budget_changed.emit(budget)

    def on_memory_changed(self, labels: set[str]) -> None:
        self._worker.memory_changed.emit(sorted(labels))

    def on_search_hits(self, hits: list[tuple[str, Any]]) -> None:
        self._worker.search_hits.emit(list(hits))

    def on_event(self, kind: str, text: str) -> None:
        self._worker.event.emit(kind, text)


class AgentWorker(QObject):
    """Signals:
    loading(str): the model is being loaded (its description)
    ready(str): the model is loaded (its id)
    streamed(str, str): a piece of "thought" or "message" text while it is generated
    stepped(object): a StepRecord after each saved step
    budget_changed(object): a ContextBudget
    memory_changed(list): labels of core memory blocks the agent edited
    search_hits(list): the agent's latest search hits, [(kind, hit)]
    event(str, str): a quiet system event (kind, text)
    failed(object): an exception for the error bar
    busy_changed(bool): the worker started or finished a piece of work the user waits for
    background_changed(bool): a background turn (login, timed heartbeat) started or ended;
        the user may still send: the message preempts it (see ``preempt``)
    turn_finished(object): a TurnResult
    agent_opened(int): the agent is ready to talk
    switch_finished(bool, object): a model switch ended: (True, the new Settings), or (False,
        the error) with the previous model loaded again
    consolidation_finished(object): a consolidation PassResult (idle time; never marks busy)
    private_started(object): a private chat began: its Services (an in-memory copy of the
        store), which the window shares for accepting messages; the worker closes them
    not_answered(int): a user message's turn ended without a reply (stopped, failed, no model):
        the id of the message, which the window offers to retry
    """

    loading = Signal(str)
    ready = Signal(str)
    streamed = Signal(str, str)
    stepped = Signal(object)
    budget_changed = Signal(object)
    memory_changed = Signal(list)
    search_hits = Signal(list)
    event = Signal(str, str)
    failed = Signal(object)
    busy_changed = Signal(bool)
    background_changed = Signal(bool)
    turn_finished = Signal(object)
    agent_opened = Signal(int)
    switch_finished = Signal(bool, object)
    consolidation_finished = Signal(object)
    private_started = Signal(object)
    not_answered = Signal(int)

    def __init__(
        self,
        open_services: Callable[[], Services],
        make_runtime: Callable[[Settings], Runtime],
        consent: ConsentPolicy | None = None,
        *,
        warm_embedder: bool = True,
    ) -> None:
        super().__init__()
        self._open_services = open_services
        self._make_runtime = make_runtime
        self._consent = consent
        self._warm_embedder = warm_embedder
        self._embedder_warm_up: threading.Thread | None = None
        # User messages this session already ran (or could not run) a turn for: one left without
        # a reply has its Retry link, and is not answered on its own when the agent reopens
        # (settings applied, tools changed), which would undo the user's Stop.
        self._tried: set[int] = set()
        self._services: Services | None = None
        self._runtime: Runtime | None = None
        self._settings: Settings | None = None
        self._agent: Agent | None = None
        self._agent_id: int | None = None
        # A private chat's services while one is on: the agent runs on them, and nothing that
        # writes on its own (login, heartbeats, consolidation, after-turn helpers) runs at all.
        self._private: Services | None = None
        self._cancel = CancelToken()
        # The user pressed Stop during the current turn (not the window closing): its message is
        # recorded as stopped, so no later start answers it on its own (see unanswered.py).
        self._stopped_by_user = False
        # The static prompt is evaluated in the background while the user reads or types: wanted
        # when an agent opens; every job stops it first (within one prompt batch) and resumes it after.
        self._warmup = Warmup()
        # Preemption: a user message never waits behind a background turn. The GUI thread saves
        # the message, then calls preempt() and queues it; a running background turn is cancelled
        # (its current generation stops and leaves nothing; a call already running is saved, with
        # nothing queued after the message) and one not started yet is skipped.
        self._lock = threading.Lock()
        self._users_waiting = 0
        self._background_running = False
        #: Run in this thread before every turn, model reload and shutdown (background users of
        #: the model give it back), and after every turn with the agent (they may borrow it).
        self.before_turn: list[Callable[[], None]] = []
        self.after_turn: list[Callable[[Agent], None]] = []

    @property
    def runtime(self) -> Runtime | None:
        return self._runtime

    # --- called from any thread ----------------------------------------------------------
    def stop(self) -> None:
        """End the current generation (closing, a job that must go first): a user message it was
        answering stays owed, and the next start answers it."""
        self._cancel.cancel()

    def stop_by_user(self) -> None:
        """The user's Stop: the message the turn was answering is marked stopped in the store and
        offered for a Retry, now and after a restart, instead of being answered on its own."""
        with self._lock:
            self._stopped_by_user = True
            self._cancel.cancel()

    def preempt(self) -> None:
        """A user message is on its way: cancel the background turn that runs, skip queued ones."""
        with self._lock:
            self._users_waiting += 1
            if self._background_running:
                self._cancel.cancel()

    @property
    def cancel_token(self) -> CancelToken:
        return self._cancel

    # --- slots (run in the worker thread) -----------------------------------------------
    @Slot(object)
    def load_model(self, settings: Settings) -> None:
        # Not busy: the user may send while the model loads; the message is saved at once and
        # its turn, queued behind this job, runs as soon as the model is ready.
        with self._working(busy=False):
            self._load(settings)

    @Slot(object)
    def switch_model(self, settings: Settings) -> None:
        """Load another model; if it fails, load the previous one again and report why. Not busy,
        as at start: a message sent meanwhile is saved at once, and its turn, queued behind this
        job, runs on whichever model is loaded when the switch ends."""
        previous = self._settings
        with self._working(busy=False):
            try:
                self._load(settings)
            except Exception as error:
                if settings.runtime == "llamacpp" and isinstance(error, ModelError):
                    error = explain_load_failure(error, resolve_model_path(settings))
                self.switch_finished.emit(False, error)  # the window reports it
                if previous is not None:
                    self._load(previous)
                return
            self.switch_finished.emit(True, settings)

    def _load(self, settings: Settings) -> None:
        if self._services is None:
            self._services = self._open_services()
        self.loading.emit(
            settings.openai_model if settings.runtime == "openai" else settings.model_path or "the bundled model"
        )
        self._run_hooks(self.before_turn)  # background users give the model back before it closes
        if self._runtime is not None:
            self._agent = None
            self._warmup.forget()
            self._runtime.close()
            self._runtime = None
        self._settings = settings
        self._runtime = self._make_runtime(settings)
        self.ready.emit(self._runtime.info.model_id)
        if self._agent_id is not None:
            self._open(self._agent_id)

    @Slot(int)
    def open_agent(self, agent_id: int) -> None:
        self._agent_id = agent_id
        self._agent = None
        if self._runtime is not None:
            with self._working():
                self._open(agent_id)

    @Slot(int)
    def send(self, message_id: int) -> None:
        """Answer a user message the window has already saved (see memdesk.core.agent.accept),
        unless a reply came after it meanwhile (it was also found unanswered when the agent opened)."""
        with self._lock:
            self._users_waiting = max(0, self._users_waiting - 1)
        if self._agent is None:  # the model did not load: the message stays saved, and owed
            if self._private is None:
                self._tried.add(message_id)
            self.busy_changed.emit(False)
            self.not_answered.emit(message_id)
            return
        self._turn(lambda agent, cancel: agent.answer_if_unanswered(message_id, cancel), message_id=message_id)

    @Slot()
    def answer_owed(self) -> None:
        """Answer the newest user message that has no reply (a turn that a close, a kill, a crash or
        a stopped model ended early): queued when the agent opens. It runs as a background turn,
        so a message the user sends meanwhile cancels it and its turn answers both."""
        if self._agent is None or self._private is not None:
            return
        owed = unanswered.owed_on_open(self._agent.memory.db, self._agent.memory.recall, self._agent.id)
        if owed is None or owed.id in self._tried:
            return
        self.event.emit(
            "unanswered", f"answering your message of {owed.created_at:%Y-%m-%d %H:%M}, which had no reply yet"
        )
        self._turn(
            lambda agent, cancel: agent.answer_if_unanswered(owed.id, cancel), background=True, message_id=owed.id
        )

    @Slot(int)
    def start_private(self, agent_id: int) -> None:
        """Copy the store into memory and talk to ``agent_id`` there until ``end_private``."""
        with self._working():
            if self._services is None:
                self._services = self._open_services()
            self._close_private()
            self._private = open_private_services(self._services)
            self._agent_id, self._agent = agent_id, None
            self.private_started.emit(self._private)
            if self._runtime is not None:
                self._open(agent_id)

    @Slot()
    def end_private(self) -> None:
        """Back to the saved conversation; the private chat's copy is discarded."""
        if self._private is None:
            return
        with self._working():
            self._close_private()
            if self._agent_id is not None and self._runtime is not None:
                self._open(self._agent_id)

    def _close_private(self) -> None:
        private, self._private = self._private, None
        if private is not None:
            self._agent = None
            self._warmup.forget()
            private.close()

    @Slot()
    def heartbeat(self) -> None:
        if self._private is not None:
            return
        self._turn(lambda agent, cancel: agent.timed_heartbeat(cancel), background=True)

    @Slot()
    def login(self) -> None:
        """The login event of an agent opened after a gap: a background turn (a message preempts it)."""
        if self._agent is not None and self._private is None and self._agent.login_due():
            self._turn(lambda agent, cancel: agent.login(cancel), background=True)

    @Slot(object)
    def consolidate(self, cancel: CancelToken) -> None:
        """An idle-time consolidation pass. It does not mark the worker busy: the user may type,
        and the window then cancels ``cancel`` (made by the requester, so a cancel that comes
        before this slot starts is not lost); the pass stops at the next token and the queued
        message runs right after."""
        if (
            self._agent is None
            or self._services is None
            or self._runtime is None
            or self._private is not None
            or cancel.cancelled
        ):
            return
        with self._working(busy=False):
            record = self._services.agents.get(self._agent.id)
            consolidation = open_consolidator(
                self._services, record, self._runtime, settings=self._settings, prefix=self._agent.prompt_prefix
            )
            if not consolidation.due():
                return
            result = consolidation.run_when_idle(cancel)  # a busy store: resumes at the next idle moment
            if result.changed_blocks:
                self.memory_changed.emit(sorted(result.changed_blocks))
                self.budget_changed.emit(self._agent.budget())
            self.consolidation_finished.emit(result)

    @Slot(object)
    def apply_settings(self, settings: Settings) -> None:
        """Sampling, step and network settings changed: reopen the agent with them."""
        self._settings = settings
        if self._agent_id is not None and self._runtime is not None:
            with self._working(busy=False):
                self._open(self._agent_id)

    @Slot()
    def refresh_budget(self) -> None:
        if self._agent is not None:
            with self._working(busy=False):
                self.budget_changed.emit(self._agent.budget())

    @Slot()
    def shutdown(self) -> None:
        self._run_hooks(self.before_turn)
        self._close_private()
        self._agent = None
        self._warmup.forget()
        if self._runtime is not None:
            self._runtime.close()
            self._runtime = None
        if self._embedder_warm_up is not None:
            # Not left half-way through loading torch when the interpreter shuts down.
            self._embedder_warm_up.join(timeout=60)
        if self._services is not None:
            self._services.close()
            self._services = None
        QThread.currentThread().quit()

    # --- helpers -------------------------------------------------------------------------
    def _open(self, agent_id: int) -> None:
        assert self._services is not None and self._runtime is not None
        services = self._private or self._services
        record = services.agents.get(agent_id)
        self._agent = open_agent(
            services,
            record,
            self._runtime,
            consent=self._consent,
            observer=_SignalObserver(self),
            settings=self._settings,
        )
        self.agent_opened.emit(agent_id)
        if self._services.vectors is not None:  # a large memory loads while the user types
            self._services.vectors.warm_in_background(agent_id, self._services.memory.recall.warm)
        self.budget_changed.emit(self._agent.budget())
        # The agent's runtime: a private chat's keeps nothing on disk, so it warms nothing.
        self._warmup.want(
            self._agent.runtime, self._agent.static_prefix(), self._agent.memory_prefix()
        )  # runs when this job ends
        with self._lock:
            turn_queued = self._users_waiting > 0
        owed = (
            None
            if self._private is not None
            else unanswered.owed_on_open(self._agent.memory.db, self._agent.memory.recall, self._agent.id)
        )
        if owed is not None and owed.id not in self._tried:
            # A message an earlier session left without a reply goes before any login turn (which
            # the reply makes unnecessary: the user was here). Queued, as the login below.
            QTimer.singleShot(0, self.answer_owed)
        elif self._private is None and self._agent.login_due():
            # Queued, not run here: the slot that opened the agent returns first, and a message
            # the user sends meanwhile is queued ahead (preempt() makes the login skip itself).
            QTimer.singleShot(0, self.login)
        elif not turn_queued:
            self._warm_embedder_now()

    def _warm_embedder_now(self) -> None:
        """Load torch and the embedding model in a thread, once, when no turn waits: the first
        search then finds them loaded. Not at start: on a small machine the import took the CPU
        (and the interpreter) from the first reply, which a new agent's recall does not need."""
        with self._lock:
            if self._users_waiting:
                return  # after their turn
        if self._warm_embedder and self._embedder_warm_up is None and self._services is not None:
            embedder = self._services.embedder
            self._embedder_warm_up = threading.Thread(
                target=lambda: _warm(embedder), name="embedder-warm-up", daemon=True
            )
            self._embedder_warm_up.start()

    def _turn(
        self, run: Callable[[Agent, CancelToken], Any], *, background: bool = False, message_id: int | None = None
    ) -> None:
        if self._agent is None:
            return
        with self._lock:
            if background and self._users_waiting:
                return  # a user message is queued behind this: it goes first
            self._cancel = CancelToken()
            self._stopped_by_user = False
            self._background_running = background
        if message_id is not None and self._private is None:  # a private chat's ids are the copy's
            self._tried.add(message_id)
            # Answered again: a close or a crash during this turn leaves it owed, not stopped.
            unanswered.clear_stopped(self._agent.memory.db, message_id)
        self._run_hooks(self.before_turn)
        agent = self._agent
        if background:
            self.background_changed.emit(True)
        try:
            with self._working(busy=not background):
                result = None
                try:
                    result = run(agent, self._cancel)
                except GenerationCancelled:
                    if background:
                        self.event.emit("preempted", "background turn cancelled for your message")
                    else:
                        self.event.emit("stopped", "generation stopped")
                finally:
                    # A user message still owed a reply (stopped, failed) is offered for a retry;
                    # not when a message the user sent cancelled this turn: that turn answers it.
                    with self._lock:
                        stopped_by_user = self._stopped_by_user
                    preempted = background and self._cancel.cancelled and not stopped_by_user
                    if (
                        message_id is not None
                        and not preempted
                        and unanswered.is_unanswered(agent.memory.db, agent.id, message_id)
                    ):
                        if stopped_by_user and self._private is None:
                            unanswered.mark_stopped(agent.memory.db, message_id, agent.memory.clock.now())
                        self.not_answered.emit(message_id)
                    self.turn_finished.emit(result)
                    if self._private is None:  # the helpers would read and keep the private prompt
                        self._run_hooks(self.after_turn, agent)
        finally:
            with self._lock:
                self._background_running = False
            if background:
                self.background_changed.emit(False)
            self._warm_embedder_now()

    @staticmethod
    def _run_hooks(hooks: list, *args: Any) -> None:
        for hook in hooks:
            try:
                hook(*args)
            except Exception:  # noqa: BLE001 - a background helper must never break a turn
                log.exception("worker hook %r failed", hook)

    class _Working:
        def __init__(self, worker: AgentWorker, busy: bool) -> None:
            self._worker = worker
            self._busy = busy

        def __enter__(self) -> None:
            self._worker._warmup.stop()  # the job goes first
            if self._busy:
                self._worker.busy_changed.emit(True)

        def __exit__(self, kind, error, trace) -> bool:
            reported = error is not None and isinstance(error, Exception)
            if reported:
                # Before the window unlocks: the error is on the bar by the time the user can type.
                log.debug("worker job failed", exc_info=error)
                self._worker.failed.emit(error)
            if self._busy:
                self._worker.busy_changed.emit(False)
            self._worker._warmup.resume()
            return reported  # a reported error does not stop the worker: it keeps serving

    def _working(self, busy: bool = True) -> AgentWorker._Working:
        return AgentWorker._Working(self, busy)


def _warm(embedder) -> None:
    try:
        embedder.embed(["warm up"])
    except Exception:  # noqa: BLE001 - the first real use reports the error where the user sees it
        log.exception("embedder warm-up failed")
