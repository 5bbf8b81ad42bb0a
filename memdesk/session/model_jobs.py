"""The jobs a session runs on its job thread (memdesk.session.jobs), one at a time: loading and
switching the model, opening the agent, private chats, and every turn (the user's, and the ones
nobody asked for: an owed reply, a login, a timed heartbeat), and consolidation passes.

Everything here runs on the job thread, which alone touches the runtime, the agent and the
session's own connection. A turn's rules: a user message's turn that ends without a reply is
offered for Retry (and marked stopped when the user stopped it, so no later start answers it on
its own); background work a user message preempts says nothing and leaves its message owed; after
each turn graph extraction borrows the model until the next job that needs it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from memdesk.core.agent import unanswered
from memdesk.core.agent.loop import Agent
from memdesk.core.base.errors import GenerationCancelled
from memdesk.core.base.settings_table import Settings
from memdesk.core.consolidation.consolidator import BUSY
from memdesk.core.memory.services import MemoryServices
from memdesk.core.runtime.base import CancelToken, Runtime
from memdesk.core.runtime.warmup import Warmup
from memdesk.session.graph_extraction import GraphExtraction
from memdesk.session.idle import CONSOLIDATION, IdleScheduler
from memdesk.session.jobs import JobThread
from memdesk.session.listener import ListenerObserver, SessionListener
from memdesk.session.parts import SessionParts, StoreServices
from memdesk.session.replies import TriedMessages

log = logging.getLogger("memdesk.session")


class ModelJobs:
    def __init__(
        self,
        parts: SessionParts,
        listener: SessionListener,
        jobs: JobThread,
        idle: IdleScheduler,
        graph: GraphExtraction | None,
        tried: TriedMessages,
        *,
        private_ready: Callable[[int, MemoryServices], bool],
        login: bool,
        warm_embedder: bool,
    ) -> None:
        """``private_ready(agent_id, memory)``: a private chat's copy is made; False when the front
        end no longer wants it (ended, or another agent chosen, meanwhile)."""
        self._parts = parts
        self._listener = listener
        self._jobs = jobs
        self._idle = idle
        self._graph = graph
        self._tried = tried
        self._private_ready = private_ready
        self._login = login
        self._warm_embedder = warm_embedder
        self._services: StoreServices | None = None
        self.runtime: Runtime | None = None
        self.settings: Settings | None = None
        self.agent: Agent | None = None
        self._agent_id: int | None = None
        self._private: StoreServices | None = None
        # The static prompt is evaluated in the background while the user reads or types: wanted
        # when an agent opens; every job stops it first (within one prompt batch) and resumes it after.
        self._warmup = Warmup()
        self._embedder_warm_up: threading.Thread | None = None

    @property
    def private(self) -> bool:
        return self._private is not None

    # --- the jobs the session queues ---------------------------------------------------------------
    def load(self, settings: Settings) -> None:
        """Not busy: the user may send while the model loads (the message's turn runs after this job)."""
        self._run_job(lambda: self._load(settings), busy=False, model=True)

    def answer(self, message_id: int) -> None:
        self._run_job(lambda: self._answer(message_id), model=True)

    def heartbeat(self) -> None:
        self._run_job(self._heartbeat, model=True)

    def _run_job(self, job: Callable[[], None], *, busy: bool | None = None, model: bool = False) -> None:
        """``model``: the job needs the model, which graph extraction gives back first. ``busy``
        (not None): the job is reported busy (True) or not, and its failure is reported."""
        if model and self._graph is not None and self._graph.lent:
            self._graph.take_back()
        if busy is None:
            job()
            return
        with self._working(busy=busy):
            job()

    def _load(self, settings: Settings) -> None:
        if self._services is None:
            self._services = self._parts.open_services()
        what = settings.openai_model if settings.runtime == "openai" else settings.model_path
        self._listener.on_loading(what or "the bundled model")
        if self.runtime is not None:
            self.agent = None
            self._warmup.forget()
            self.runtime.close()
            self.runtime = None
        self.settings = settings
        self.runtime = self._parts.make_runtime(settings)
        self._idle.touch()
        self._listener.on_ready(self.runtime.info.model_id)
        if self._agent_id is not None:
            self._open(self._agent_id)

    def switch(self, settings: Settings) -> None:
        previous = self.settings
        with self._working(busy=False):
            if self._graph is not None:
                self._graph.take_back()
            try:
                self._load(settings)
            except Exception as error:  # noqa: BLE001 - reported, and the previous model loads again
                self._listener.on_switch_finished(False, self._parts.explain_load_failure(settings, error))
                if previous is not None:
                    self._load(previous)
                return
            self._listener.on_switch_finished(True, settings)

    def open(self, agent_id: int) -> None:
        self._agent_id, self.agent = agent_id, None
        if self.runtime is not None:
            self._run_job(lambda: self._open(agent_id), busy=True)

    def _open(self, agent_id: int) -> None:
        assert self._services is not None and self.runtime is not None
        services = self._private or self._services
        observer = ListenerObserver(self._listener)
        agent = self.agent = self._parts.open_agent(services, agent_id, self.runtime, observer, self.settings)
        self._listener.on_agent_opened(agent_id)
        if self._services.vectors is not None:  # a large memory loads while the user types
            self._services.vectors.warm_in_background(agent_id, self._services.memory.recall.warm)
        self._listener.on_budget(agent.budget())
        # The agent's runtime: a private chat's keeps nothing on disk, so it warms nothing.
        self._warmup.want(agent.runtime, agent.static_prefix(), agent.memory_prefix())  # once this job ends
        self._idle.touch()
        if not self._queue_on_open(agent):
            self._warm_embedder_now()

    def _queue_on_open(self, agent: Agent) -> bool:
        """Queue what runs on its own as the agent opens, behind what already waits (a message sent
        meanwhile goes first, and the background turn then skips itself): whether a turn is queued.
        A message an earlier session left without a reply goes before any login turn, which the
        reply makes unnecessary: the user was here."""
        if self._private is None:
            owed = unanswered.owed_on_open(agent.memory.db, agent.memory.recall, agent.id)
            if owed is not None and owed.id not in self._tried:
                self._jobs.submit(lambda: self._run_job(self._owed, model=True))
                return True
            if self._login and agent.login_due():
                self._jobs.submit(lambda: self._run_job(self._login_turn, model=True))
                return True
        return self._jobs.users_waiting > 0

    def apply(self, settings: Settings) -> None:
        self.settings = settings
        agent_id = self._agent_id
        if agent_id is not None and self.runtime is not None:
            self._run_job(lambda: self._open(agent_id), busy=False)

    def budget(self) -> None:
        agent = self.agent
        if agent is not None:
            self._run_job(lambda: self._listener.on_budget(agent.budget()), busy=False)

    def start_private(self, agent_id: int) -> None:
        def start() -> None:
            if self._services is None:
                self._services = self._parts.open_services()
            self._close_private()
            private = self._parts.open_private(self._services)
            if not self._private_ready(agent_id, private.memory):
                private.close()  # ended (or another agent chosen) while the copy was made
                return
            self._private, self._agent_id, self.agent = private, agent_id, None
            self._listener.on_private_started(private)
            if self.runtime is not None:
                self._open(agent_id)

        self._run_job(start, busy=True)

    def end_private(self) -> None:
        if self._private is None:
            return

        def end() -> None:
            self._close_private()
            if self._agent_id is not None and self.runtime is not None:
                self._open(self._agent_id)

        self._run_job(end, busy=True)

    def _close_private(self) -> None:
        private, self._private = self._private, None
        if private is not None:
            self.agent = None
            self._warmup.forget()
            private.close()

    def _answer(self, message_id: int) -> None:
        """Answer a saved user message, unless a reply came after it meanwhile (it was also found
        owed when the agent opened)."""
        if self.agent is None:  # the model did not load: the message stays saved, and owed
            if self._private is None:
                self._tried.add(message_id)
            self._listener.on_busy(False)
            self._listener.on_not_answered(message_id)
            return
        self._turn(lambda agent, cancel: agent.answer_if_unanswered(message_id, cancel), message_id=message_id)

    def _owed(self) -> None:
        """Answer the newest user message without a reply (a turn that a close, a kill, a crash or a
        stopped model ended early), in the background: a message sent meanwhile preempts it, and
        its turn answers both."""
        agent = self.agent
        if agent is None or self._private is not None:
            return
        owed = unanswered.owed_on_open(agent.memory.db, agent.memory.recall, agent.id)
        if owed is None or owed.id in self._tried:
            return
        when = f"{owed.created_at:%Y-%m-%d %H:%M}"
        self._listener.on_event("unanswered", f"answering your message of {when}, which had no reply yet")
        self._turn(lambda a, cancel: a.answer_if_unanswered(owed.id, cancel), background=True, message_id=owed.id)

    def _login_turn(self) -> None:
        """The login event of an agent opened after a gap."""
        agent = self.agent
        if agent is not None and self._private is None and agent.login_due():
            self._turn(lambda a, cancel: a.login(cancel), background=True)

    def _heartbeat(self) -> None:
        if self._private is None:
            self._turn(lambda agent, cancel: agent.timed_heartbeat(cancel), background=True)

    def consolidate(self) -> None:
        agent, services, runtime = self.agent, self._services, self.runtime
        if agent is None or services is None or runtime is None or self._private is not None:
            return
        cancel = self._jobs.begin(background=True)
        if cancel is None:
            return  # a user message is queued behind this: it goes first
        try:
            with self._working(busy=False):
                if self._graph is not None:
                    self._graph.take_back()
                consolidation = self._parts.open_consolidator(
                    services, agent.id, runtime, self.settings, agent.prompt_prefix
                )
                if not consolidation.due():
                    return
                result = consolidation.run_when_idle(cancel)
                if result.status == BUSY:  # another writer held the store: at the next idle moment
                    self._idle.again(CONSOLIDATION)
                if result.changed_blocks:
                    self._listener.on_memory_changed(sorted(result.changed_blocks))
                    self._listener.on_budget(agent.budget())
                self._listener.on_consolidation_finished(result)
        finally:
            self._jobs.end()

    def _turn(
        self, run: Callable[[Agent, CancelToken], Any], *, background: bool = False, message_id: int | None = None
    ) -> None:
        agent = self.agent
        if agent is None:
            return
        cancel = self._jobs.begin(background=background)
        if cancel is None:
            return  # a user message is queued behind this: it goes first
        private = self._private is not None
        db = agent.memory.db
        if message_id is not None and not private:  # a private chat's ids are the copy's
            self._tried.add(message_id)
            unanswered.clear_stopped(db, message_id)  # answered again: a crash now leaves it owed
        if background:
            self._listener.on_background(True)
        try:
            with self._working(busy=not background):
                result, ctrl_c = None, False
                try:
                    result = run(agent, cancel)
                except KeyboardInterrupt:  # Ctrl+C where the front end runs the model on its own thread
                    ctrl_c = True
                    self._listener.on_event("stopped", "you stopped the reply")
                except GenerationCancelled:
                    if background and not self._jobs.stopped_by_user():
                        log.info("a background turn gave way to the user's message")
                    else:
                        self._listener.on_event("stopped", "you stopped the reply")
                finally:
                    by_user = ctrl_c or self._jobs.stopped_by_user()
                    # A user message still owed a reply (stopped, failed) is offered for a retry;
                    # not when a message the user sent cancelled this turn: that turn answers it.
                    preempted = background and cancel.cancelled and not by_user
                    if message_id is not None and not preempted and unanswered.is_unanswered(db, agent.id, message_id):
                        if by_user and not private:
                            unanswered.mark_stopped(db, message_id, agent.memory.clock.now())
                        self._listener.on_not_answered(message_id)
                    self._listener.on_turn_finished(result)
                    if not private:  # the graph would read and keep the private prompt
                        self._lend_graph(agent)
        finally:
            self._jobs.end()
            if background:
                self._listener.on_background(False)
            self._idle.touch()
            self._warm_embedder_now()

    def _lend_graph(self, agent: Agent) -> None:
        if self._graph is None:
            return
        try:
            prefix = agent.prompt_prefix()
        except Exception:  # noqa: BLE001 - a missing prefix only costs the KV cache reuse
            log.debug("no prompt prefix for the graph", exc_info=True)
            prefix = []
        self._graph.after_turn(agent.id, prefix, agent.runtime)

    def _warm_embedder_now(self) -> None:
        """Load the embedding model in a thread, once, when no turn waits: the first search then
        finds it loaded. Not at start: on a small machine loading took the CPU (and, with torch,
        the interpreter) from the first reply, which a new agent's recall does not need."""
        if self._jobs.users_waiting:
            return  # after their turn
        if self._warm_embedder and self._embedder_warm_up is None and self._services is not None:
            embedder = self._services.embedder
            self._embedder_warm_up = threading.Thread(
                target=lambda: _warm(embedder), name="embedder-warm-up", daemon=True
            )
            self._embedder_warm_up.start()

    def shutdown(self) -> None:
        if self._graph is not None:
            self._graph.take_back()
        self._close_private()
        self.agent = None
        self._warmup.forget()
        if self.runtime is not None:
            self.runtime.close()
            self.runtime = None
        if self._embedder_warm_up is not None:
            # Not left half-way through loading the model when the interpreter shuts down.
            self._embedder_warm_up.join(timeout=60)
        if self._services is not None:
            self._services.close()
            self._services = None

    def _working(self, busy: bool) -> _Working:
        return _Working(self._warmup, self._listener, busy)


class _Working:
    """Around a job: the warm-up gives way first; busy while it runs (when the user waits for it);
    a failure reported (before the front end unlocks: the error shows by the time the user can
    type) and swallowed, so the session keeps serving."""

    def __init__(self, warmup: Warmup, listener: SessionListener, busy: bool) -> None:
        self._warmup, self._listener, self._busy = warmup, listener, busy

    def __enter__(self) -> None:
        self._warmup.stop()
        if self._busy:
            self._listener.on_busy(True)

    def __exit__(self, kind, error, trace) -> bool:
        reported = isinstance(error, Exception)
        if reported:
            log.debug("session job failed", exc_info=error)
            self._listener.on_failed(error)
        if self._busy:
            self._listener.on_busy(False)
        self._warmup.resume()
        return reported


def _warm(embedder) -> None:
    try:
        embedder.embed(["warm up"])
    except Exception:  # noqa: BLE001 - the first real use reports the error where the user sees it
        log.exception("embedder warm-up failed")
