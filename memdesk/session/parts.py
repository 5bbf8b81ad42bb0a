"""What a session is built from: factories the composition root (memdesk.app.sessions) fills in,
so the session layer never imports the root above it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from memdesk.core.agent.loop import Agent
from memdesk.core.agent.observer import AgentObserver
from memdesk.core.base.settings_table import Settings
from memdesk.core.consolidation.consolidator import Consolidator
from memdesk.core.memory.forget.retention import Retention
from memdesk.core.memory.services import MemoryServices
from memdesk.core.runtime.base import ChatMessage, Runtime
from memdesk.session.graph_extraction import GraphExtraction
from memdesk.session.idle import IdleIntervals
from memdesk.session.listener import SessionListener

T = TypeVar("T")


class StoreServices(Protocol):
    """What a session uses of one connection's services (memdesk.app.services.Services)."""

    memory: MemoryServices
    embedder: Any
    vectors: Any  # the rankers' vector index, warmed when an agent opens (None: none)

    def close(self) -> None: ...


#: The services the root's factories make and take (memdesk.app.services.Services).
S = TypeVar("S", bound=StoreServices)


@dataclass(frozen=True)
class SessionParts(Generic[S]):
    #: The session's own connection, opened (and closed) on its job thread.
    open_services: Callable[[], S]
    make_runtime: Callable[[Settings], Runtime]
    #: (services, agent id, runtime, observer, settings) -> the agent, with the front end's consent.
    open_agent: Callable[[S, int, Runtime, AgentObserver, Settings | None], Agent]
    #: A private chat's services: an in-memory copy of these; closing them discards it.
    open_private: Callable[[S], S]
    #: (services, agent id, runtime, settings, the agent's prompt prefix) -> its consolidation pass.
    open_consolidator: Callable[[S, int, Runtime, Settings | None, Callable[[], Sequence[ChatMessage]]], Consolidator]
    #: Runs work on the store's retention, on a connection of its own (a VACUUM must not hold the
    #: front end's), and returns what the work returned.
    with_retention: Callable[[Callable[[Retention], Any]], Any]
    #: The error to show for a model that did not load (with what the user can do about it).
    explain_load_failure: Callable[[Settings, Exception], Exception] = lambda _settings, error: error
    #: The knowledge graph's extraction reporting to the listener (None: no graph).
    make_graph: Callable[[SessionListener], GraphExtraction] | None = None
    #: When idle work falls due (None: IdleIntervals.from_settings).
    idle_intervals: Callable[[Settings], IdleIntervals] | None = None
