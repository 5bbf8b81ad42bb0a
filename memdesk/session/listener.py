"""What a session tells its front end: one callback per kind of news, each a no-op by default, so a
front end overrides only what it shows (the window re-emits every one as a Qt signal, the terminal
prints a few).

Callbacks arrive on the session's own threads, never on the front end's: the job thread (turns,
the model, the agent), the idle scheduler's (retention) and the knowledge graph's (graph news). A
front end that must touch its widgets hands the news over to its own thread (Qt's queued signals).
"""

from __future__ import annotations

from typing import Any

from memdesk.core.agent.context import ContextBudget
from memdesk.core.agent.observer import AgentObserver, StepRecord, TurnResult
from memdesk.core.consolidation.consolidator import PassResult
from memdesk.core.runtime.base import StreamEvent
from memdesk.core.transfer.history.importer import ImportProgress


class SessionListener:
    # --- the model and the agent ---------------------------------------------------------------
    def on_loading(self, what: str) -> None:
        """The model is being loaded (its description)."""

    def on_ready(self, model_id: str) -> None:
        """The model is loaded."""

    def on_switch_finished(self, ok: bool, detail: object) -> None:
        """A model switch ended: (True, the new Settings), or (False, the error) with the previous
        model loaded again."""

    def on_agent_opened(self, agent_id: int) -> None:
        """The agent is ready to talk."""

    def on_private_started(self, services: object) -> None:
        """A private chat began on this in-memory copy of the store (the session closes it)."""

    # --- a turn as it runs ---------------------------------------------------------------------
    def on_streamed(self, kind: str, text: str) -> None:
        """A piece of "thought" or "message" text while it is generated."""

    def on_step(self, step: StepRecord) -> None:
        """A step finished and was saved."""

    def on_budget(self, budget: ContextBudget) -> None:
        """The context budget of the prompt the next step would send."""

    def on_memory_changed(self, labels: list[str]) -> None:
        """Core memory blocks the agent (or a consolidation pass) edited."""

    def on_search_hits(self, hits: list[tuple[str, Any]]) -> None:
        """The agent's latest search hits, [(kind, hit)]."""

    def on_event(self, kind: str, text: str) -> None:
        """A quiet system event worth showing (the agent's own, "unanswered", "stopped")."""

    def on_failed(self, error: Exception) -> None:
        """A job failed; the session goes on serving."""

    def on_busy(self, busy: bool) -> None:
        """Work the user waits for started or ended (a reply, opening the agent)."""

    def on_background(self, running: bool) -> None:
        """A turn nobody asked for (login, a timed heartbeat, an owed reply) started or ended; a
        message sent meanwhile preempts it."""

    def on_turn_finished(self, result: TurnResult | None) -> None:
        """A turn ended (None: stopped, preempted or failed)."""

    def on_not_answered(self, message_id: int) -> None:
        """A user message's turn ended without a reply (stopped, failed, no model): Retry answers it."""

    # --- work nobody asked for -----------------------------------------------------------------
    def on_consolidation_finished(self, result: PassResult) -> None:
        """An idle-time consolidation pass ended (never marks the session busy)."""

    def on_retention_waits(self, agent_id: int, description: str) -> None:
        """A retention policy nobody confirmed is due (once per agent and session): what it would
        remove. It applies only after ``Session.confirm_retention``."""

    def on_retention_done(self, agent_id: int, removed: int) -> None:
        """Retention forgot ``removed`` old conversation messages."""

    def on_graph_changed(self, agent_id: int) -> None:
        """The agent's knowledge graph changed."""

    def on_graph_pending(self, agent_id: int, entities: int, facts: int) -> None:
        """The agent's sources still queued for each stage of graph extraction."""

    def on_import_progress(self, progress: ImportProgress) -> None:
        """An import of another assistant's conversations moved on (memdesk.session.history_jobs)."""

    def on_import_finished(self, agent_id: int, import_id: int, proposals: int) -> None:
        """An import finished; ``proposals``: what MemDesk learned, waiting for review."""

    def on_graph_failed(self, error: Exception) -> None:
        """Graph extraction stopped as a whole (its store failed); per-source failures are retried."""


class ListenerObserver(AgentObserver):
    """The agent's callbacks (made on the job thread) passed on to the session's listener."""

    def __init__(self, listener: SessionListener) -> None:
        self._listener = listener

    def on_stream(self, event: StreamEvent) -> None:
        self._listener.on_streamed(event.kind, event.text)

    def on_step(self, step: StepRecord) -> None:
        self._listener.on_step(step)

    def on_budget(self, budget: ContextBudget) -> None:
        self._listener.on_budget(budget)

    def on_memory_changed(self, labels: set[str]) -> None:
        self._listener.on_memory_changed(sorted(labels))

    def on_search_hits(self, hits: list[tuple[str, Any]]) -> None:
        self._listener.on_search_hits(list(hits))

    def on_event(self, kind: str, text: str) -> None:
        self._listener.on_event(kind, text)
