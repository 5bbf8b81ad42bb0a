"""One conversation's rules, for every front end (the window, the terminal, any server).

A front end calls the session's methods from its own thread; each returns at once. What the user
sends is saved right there, through the front end's own connection (``front``), committed before
anything is cancelled or waited for; every job that needs the model or the agent then runs on the
session's job thread, in order (memdesk.session.jobs): answering, loading and switching the model,
opening the agent, private chats, and the work nobody asked for, which a user message preempts.
News comes back through the front end's ``SessionListener``.

The rules, each kept here once:
- a message sent while the model loads or switches is saved and answered by whichever model is
  loaded when the job ends (the jobs run in order);
- a message an earlier session left without a reply is answered as the agent opens, in the
  background, unless the user stopped its reply (Stop marks it in the store; Retry answers it);
- a login turn greets a returning user after a gap (not when an owed reply goes first);
- a private chat runs on an in-memory copy of the store, and nothing that writes on its own runs;
- idle work (timed heartbeats, consolidation, retention) falls due on the idle scheduler
  (memdesk.session.idle), graph extraction after each turn (memdesk.session.graph_extraction),
  which borrows the model between turns;
- an import of another assistant's conversations runs as background work, a slice at a time, and
  resumes when the agent opens again (memdesk.session.history_jobs).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memdesk.core.agent import unanswered
from memdesk.core.agent.accept import accept_user_message
from memdesk.core.agent.loop import Agent
from memdesk.core.base.errors import PrivateChatRefusal
from memdesk.core.base.settings_table import Settings
from memdesk.core.memory.recall import Message
from memdesk.core.memory.services import MemoryServices
from memdesk.core.runtime.base import CancelToken, Runtime
from memdesk.session import replies
from memdesk.session.history_jobs import HistoryJobs
from memdesk.session.idle import IdleIntervals, IdleScheduler
from memdesk.session.jobs import JobThread
from memdesk.session.listener import SessionListener
from memdesk.session.model_jobs import ModelJobs
from memdesk.session.parts import SessionParts
from memdesk.session.sent_before_open import SentBeforeOpen
from memdesk.session.unasked import UnaskedWork

log = logging.getLogger("memdesk.session")

NOTHING_OWED = "every message has its reply"


@dataclass(frozen=True)
class Turn:
    """A user message saved and queued: ``done`` is set once its turn ended (or the session closed)."""

    message: Message
    done: threading.Event


class Session:
    def __init__(
        self,
        parts: SessionParts,
        listener: SessionListener,
        front: MemoryServices,
        *,
        login: bool = True,
        warm_embedder: bool = True,
    ) -> None:
        """``front``: the memory the front end's thread saves through (its own connection).
        ``login``: greet a returning user with a login turn. ``warm_embedder``: load the embedding
        model in a thread once no turn waits (the terminal loads it itself, at start)."""
        self._parts = parts
        self._front = front
        self._jobs = JobThread()
        self._unasked = UnaskedWork(
            may_run=self.may_run_on_its_own,
            agent_id=lambda: None if self._private_wanted else self._front_agent,
            heartbeat=self.heartbeat,
            consolidate=self.consolidate,
            with_retention=parts.with_retention,
            listener=listener,
            run_soon=lambda kind: self.idle.run_now(kind),
        )
        self.idle = IdleScheduler(self._intervals, self._unasked.run)
        self.graph = parts.make_graph(listener) if parts.make_graph is not None else None
        self._lock = threading.Lock()
        # The front end's side, set at once when it asks (the job thread catches up in order).
        self._front_agent: int | None = None
        self._private_wanted = False
        self._private_memory: MemoryServices | None = None  # where a private chat's messages go
        self._latest: Settings | None = None
        self._tried = replies.TriedMessages()
        self._model = ModelJobs(
            parts,
            listener,
            self._jobs,
            self.idle,
            self.graph,
            self._tried,
            private_ready=self._private_ready,
            login=login,
            warm_embedder=warm_embedder,
        )
        self.history = HistoryJobs(
            self._jobs,
            parts.open_services,
            listener,
            graph_catch_up=self.graph_catch_up,
            user_name=lambda: (self._latest or self._model.settings or Settings()).user_name,
        )

    def start(self) -> None:
        self._jobs.start()
        self.idle.start()
        if self.graph is not None:
            self.graph.start()

    # --- state, read from any thread -----------------------------------------------------------
    @property
    def runtime(self) -> Runtime | None:
        return self._model.runtime

    @property
    def cancel_token(self) -> CancelToken:
        """The token of the job that runs (a consent question gives up when it is cancelled)."""
        return self._jobs.cancel_token

    @property
    def agent_id(self) -> int | None:
        return self._front_agent

    @property
    def private(self) -> bool:
        return self._private_wanted

    def threads(self) -> list[threading.Thread]:
        threads = [self._jobs.thread, self.idle.thread]
        return threads + ([self.graph.thread] if self.graph is not None else [])

    def may_run_on_its_own(self) -> bool:
        """Nothing runs or waits, an agent is open and no private chat is on: idle work may start."""
        return self._model.agent is not None and not self._private_wanted and self._jobs.idle()

    # --- the model and the agent ---------------------------------------------------------------
    def load_model(self, settings: Settings) -> None:
        """Load the model. Not busy: a message sent meanwhile is saved at once and answered when
        the model is ready (its job runs after this one)."""
        self._latest = settings
        self._jobs.submit(lambda: self._model.load(settings))

    def switch_model(self, settings: Settings) -> None:
        """Load another model; if it fails, the previous one again, and say why."""
        self._latest = settings
        self._jobs.submit(lambda: self._model.switch(settings))

    def open_agent(self, agent_id: int) -> None:
        with self._lock:
            self._front_agent = agent_id
        self._jobs.submit(lambda: self._model.open(agent_id))
        self.history.resume(agent_id)  # an import a close or a crash cut short goes on

    def import_history(self, agent_id: int, path, selection=None, totals: tuple[int, int] = (0, 0)) -> None:
        """Import an export of another assistant's conversations into the agent, in the background
        (the front end previewed it: memdesk.app.operations.import_history; ``totals``: the
        conversations and messages it counted); news comes as ``on_import_progress`` and
        ``on_import_finished``; a message sent meanwhile goes first."""
        self._refuse_import_in_private()
        self.history.start(agent_id, path, selection, totals)

    def pause_import(self) -> None:
        """The person's Stop of an import: it keeps what came in and goes on when resumed."""
        self.history.pause()

    def resume_import(self, import_id: int) -> None:
        """Go on with an import the person stopped (or that failed)."""
        self._refuse_import_in_private()
        self.history.resume_import(import_id)

    def _refuse_import_in_private(self) -> None:
        if self._private_wanted:
            raise PrivateChatRefusal(
                "Conversations cannot be imported during a private chat: nothing of it is saved",
                hint="end the private chat, then import them",
            )

    def apply_settings(self, settings: Settings) -> None:
        """Sampling, step, network or idle settings changed: the agent reopens with them."""
        self._latest = settings
        self.idle.touch()
        self._jobs.submit(lambda: self._model.apply(settings))

    def refresh_budget(self) -> None:
        self._jobs.submit(self._model.budget)

    def start_private(self, agent_id: int) -> None:
        """Copy the store into memory and talk to ``agent_id`` there until ``end_private``."""
        with self._lock:
            self._front_agent, self._private_wanted, self._private_memory = agent_id, True, None
        self._jobs.submit(lambda: self._model.start_private(agent_id), user=True)

    def end_private(self) -> None:
        """Back to the saved conversation; the private chat's copy is discarded."""
        with self._lock:
            self._private_wanted, self._private_memory = False, None
        self._jobs.submit(self._model.end_private)

    # --- what the user sends -------------------------------------------------------------------
    def send(self, text: str) -> Turn:
        """Save ``text`` as the user's message (committed when this returns) and queue its answer."""
        memory, agent_id = self._accepting()
        message = accept_user_message(memory, agent_id, text)
        return Turn(message, self._answer(message.id))

    def deliver_sent_before_open(self, inbox: SentBeforeOpen) -> list[tuple[Message, str]]:
        """Messages sent before the window opened are saved, oldest first, all or none, and the
        newest one's turn answers them together (the agent sees them all in its history)."""
        if self._private_wanted:
            return []
        memory, agent_id = self._accepting()
        delivered = replies.deliver(memory, agent_id, inbox)
        if delivered:
            self._answer(delivered[-1][0].id)
        return delivered

    def retry(self, message_id: int | None = None) -> Turn | str:
        """Answer a message left without a reply (None: the newest one); or say why not."""
        memory, agent_id = self._accepting()
        if message_id is None:
            owed = unanswered.newest(memory.db, memory.recall, agent_id)
            if owed is None:
                return NOTHING_OWED
            message_id = owed.id
        why = replies.why_not_retry(memory, agent_id, message_id)
        if why is not None:
            return why
        message = memory.recall.get(message_id)
        assert message is not None
        return Turn(message, self._answer(message_id))

    def owed_reply(self, agent_id: int) -> replies.OwedReply | None:
        """The saved conversation's newest message without a reply, and whether it waits for Retry."""
        return replies.owed_reply(self._front, agent_id, self._tried)

    def stop(self) -> None:
        """End the current generation (closing): a message it was answering stays owed."""
        self._jobs.stop()

    def stop_by_user(self) -> None:
        """The user's Stop: the message being answered is marked stopped and waits for Retry."""
        self._jobs.stop_by_user()

    def query(self, ask: Callable[[Agent], Any], timeout: float | None = None) -> Any:
        """``ask(agent)`` on the job thread, after what is queued (work nobody asked for gives way)."""
        answer: dict[str, Any] = {}

        def job() -> None:
            try:
                agent = self._model.agent
                answer["value"] = ask(agent) if agent is not None else None
            except Exception as error:  # noqa: BLE001 - raised in the asking thread
                answer["error"] = error

        self._jobs.submit(job, user=True).done.wait(timeout)
        if "error" in answer:
            raise answer["error"]
        return answer.get("value")

    # --- work nobody asked for -----------------------------------------------------------------
    def heartbeat(self) -> None:
        """A timed heartbeat now, in the background (a message preempts it)."""
        self._jobs.submit(self._model.heartbeat)

    def consolidate(self) -> None:
        """A consolidation pass now, if one is due, in the background (a message preempts it)."""
        self._jobs.submit(self._model.consolidate)

    def confirm_retention(self, agent_id: int) -> None:
        self._unasked.confirm_retention(agent_id)

    def announce_retention(self, agent_id: int) -> str | None:
        return self._unasked.announce_retention(agent_id)

    def apply_retention(self) -> str:
        return self._unasked.apply_retention()

    def graph_catch_up(self, agent_id: int) -> None:
        if self.graph is not None:
            self.graph.nudge(agent_id)

    def graph_rebuild(self, agent_id: int) -> None:
        if self.graph is not None:
            self.graph.nudge(agent_id, rebuild=True)

    def close(self, timeout: float = 30.0) -> bool:
        """Stop everything and close the store's connection; whether every thread ended within
        ``timeout`` seconds each (one still inside something it cannot leave finishes on its own)."""
        ended = self.idle.close(timeout)
        if self.graph is not None:
            ended = self.graph.close(timeout) and ended
        return self._jobs.close(self._shutdown, timeout) and ended

    def _shutdown(self) -> None:
        self.history.close()  # an import stops where it is and resumes next time
        self._model.shutdown()

    # --- the front end's side ------------------------------------------------------------------
    def _accepting(self) -> tuple[MemoryServices, int]:
        with self._lock:
            agent_id, private, memory = self._front_agent, self._private_wanted, self._private_memory
        if agent_id is None:
            raise ValueError("no agent is open")
        if private and memory is None:  # the copy is being made: a message now would be saved for good
            raise PrivateChatRefusal("The private chat is still starting", hint="send it again in a moment")
        return memory or self._front, agent_id

    def _answer(self, message_id: int) -> threading.Event:
        self.idle.touch()
        return self._jobs.submit(lambda: self._model.answer(message_id), user=True).done

    def _private_ready(self, agent_id: int, memory: MemoryServices) -> bool:
        """On the job thread: a private chat's copy is made; from now on messages are saved there."""
        with self._lock:
            wanted = self._private_wanted and self._front_agent == agent_id
            if wanted:
                self._private_memory = memory
        return wanted

    def _intervals(self) -> IdleIntervals:
        settings = self._latest or self._model.settings
        if settings is None:
            return IdleIntervals()
        return (self._parts.idle_intervals or IdleIntervals.from_settings)(settings)
