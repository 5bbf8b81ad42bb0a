"""Building sessions (memdesk.session): the factories a session runs on, filled in from the store's
services, for every front end (the window's worker, the terminal chat)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memdesk.app.agents import open_agent, open_consolidator
from memdesk.app.local_model import resolve_model_path
from memdesk.app.operations import open_retention
from memdesk.app.services import Services, memory_history, open_private_services, open_services
from memdesk.core.base.errors import ModelError
from memdesk.core.base.settings_table import Settings
from memdesk.core.graph.extraction import ExtractionOptions, GraphExtractor
from memdesk.core.graph.store import KnowledgeGraph
from memdesk.core.models.preflight import explain_load_failure
from memdesk.core.runtime.base import Runtime
from memdesk.core.storage import Database, open_database
from memdesk.core.storage.settings_store import SettingsStore
from memdesk.core.tools.context import ConsentPolicy
from memdesk.session.graph_extraction import GraphExtraction
from memdesk.session.idle import IdleIntervals
from memdesk.session.listener import SessionListener
from memdesk.session.parts import SessionParts
from memdesk.session.session import Session

#: The agent's step transaction may hold the write lock while a tool runs: the graph's connection
#: waits rather than fails.
GRAPH_BUSY_TIMEOUT_S = 60.0


def default_analyser():
    from memdesk.core.graph.nlp import SpacyAnalyser

    return SpacyAnalyser()


def build_session(
    front: Services,
    listener: SessionListener,
    *,
    make_runtime: Callable[[Settings], Runtime],
    open_session_services: Callable[[], Services] | None = None,
    consent: ConsentPolicy | None = None,
    analyser: Callable[[], Any] | None = default_analyser,
    idle_intervals: Callable[[Settings], IdleIntervals] | None = None,
    login: bool = True,
    warm_embedder: bool = True,
) -> Session:
    """A session for the front end whose own services are ``front`` (its thread saves what the user
    sends through them). The session's job thread has a connection of its own
    (``open_session_services``; by default another one to the same store, with the same key and
    embedder). ``analyser``: the knowledge graph's NLP (None: no graph extraction)."""
    paths, key = front.paths, front.key

    def session_services() -> Services:
        return open_services(paths, key=key, embedder=front.embedder)

    def agent(services, agent_id, runtime, observer, settings) -> Any:
        return open_agent(
            services, services.agents.get(agent_id), runtime, consent=consent, observer=observer, settings=settings
        )

    def consolidator(services, agent_id, runtime, settings, prefix) -> Any:
        return open_consolidator(services, services.agents.get(agent_id), runtime, settings=settings, prefix=prefix)

    def with_retention(work) -> Any:
        db = open_database(paths.database, key=key)
        try:
            return work(open_retention(front, db=db))
        finally:
            db.close()

    def explain(settings: Settings, error: Exception) -> Exception:
        if settings.runtime == "llamacpp" and isinstance(error, ModelError):
            return explain_load_failure(error, resolve_model_path(settings))
        return error

    parts = SessionParts(
        open_services=open_session_services or session_services,
        make_runtime=make_runtime,
        open_agent=agent,
        open_private=open_private_services,
        open_consolidator=consolidator,
        with_retention=with_retention,
        explain_load_failure=explain,
        make_graph=(lambda listener: graph_extraction(front, analyser, listener)) if analyser is not None else None,
        idle_intervals=idle_intervals,
    )
    return Session(parts, listener, front.memory, login=login, warm_embedder=warm_embedder)


def graph_extraction(front: Services, analyser: Callable[[], Any], listener: SessionListener) -> GraphExtraction:
    """The knowledge graph's extraction on a connection of its own to ``front``'s store (with its
    key), reporting to ``listener``; ``analyser`` builds the NLP on the extraction's thread."""
    paths, key, clock = front.paths, front.key, front.clock

    def extractor(db: Database) -> GraphExtractor:
        store = SettingsStore(db)
        # The extractor's facts and entities are recorded in the memory history, like every writer's.
        graph = KnowledgeGraph(db, clock, front.embedder, history=memory_history(db, clock))
        return GraphExtractor(graph, analyser(), clock, user_name=lambda: store.load().user_name)

    def options(db: Database) -> ExtractionOptions:
        settings = SettingsStore(db).load()
        return ExtractionOptions(settings.graph_extraction, settings.graph_model_facts, settings.graph_document_facts)

    return GraphExtraction(
        lambda: open_database(paths.database, key=key, busy_timeout=GRAPH_BUSY_TIMEOUT_S), extractor, options, listener
    )
