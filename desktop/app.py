"""The composition root: the one place that builds MemDesk's objects and wires them together.

Front ends (the CLI, the Qt window) call ``open_services`` once, then ``make_runtime`` and
``open_agent``; nothing else constructs stores or runtimes, and nothing looks them up globally.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from functools import cached_property
from pathlib import Path

from desktop.core.agent.agents import AgentRecord, AgentStore
from desktop.core.agent.consolidation import ConsolidationSettings, Consolidator
from desktop.core.agent.auto_recall import ArchivalSource, AutoRecall, ConversationSource, MemorySource, RecallSettings
from desktop.core.agent.loop import Agent, AgentSettings, MemoryServices
from desktop.core.agent.observer import AgentObserver
from desktop.core.clock import Clock, SystemClock, system_zone, zone_named
from desktop.core.documents.ingest import Ingestor
from desktop.core.embedding import Embedder
from desktop.core.graph.store import KnowledgeGraph
from desktop.core.retrieval.messages import GRAPH_WEIGHT
from desktop.core.memory.archival import ArchivalMemory
from desktop.core.memory.core_memory import CoreMemory
from desktop.core.memory.history import MemoryHistory
from desktop.core.memory.recall import RecallMemory
from desktop.core.models import hub  # noqa: F401 - reads HF_ENDPOINT/HF_HUB_OFFLINE at start-up (see hub.py)
from desktop.core.models.library import ModelLibrary
from desktop.core.prompts import Prompts
from desktop.core.retrieval import MessageRanker, PassageRanker, VectorIndex
from desktop.core.runtime.base import ChatMessage, Runtime
from desktop.core.storage import Database, open_database
from desktop.core.tools.builtin import default_registry
from desktop.core.tools.context import ConsentPolicy
from desktop.core.tools.files import FileSandbox
from desktop.core.tools.http import HttpPolicy
from desktop.core.tools.imported import ImportedTools
from desktop.core.tools.registry import load_user_tools
from desktop.errors import ConfigError
from desktop.paths import RESOURCES, Paths
from desktop.settings import Settings, SettingsStore

log = logging.getLogger("memdesk.app")


@dataclass
class Services:
    paths: Paths
    db: Database
    clock: Clock
    prompts: Prompts
    settings_store: SettingsStore
    memory: MemoryServices
    embedder: Embedder
    vectors: VectorIndex | None = None  # the rankers' shared vector index (warmed when an agent opens)

    @property
    def settings(self) -> Settings:
        return self.settings_store.load()

    @property
    def agents(self) -> AgentStore:
        return self.memory.agents

    @cached_property
    def models(self) -> ModelLibrary:
        return ModelLibrary(self.paths)

    def create_agent(self, name: str, *, persona: str | None = None, human: str | None = None) -> AgentRecord:
        return self.agents.create(
            name, system_prompt=self.prompts.system, persona=persona or self.prompts.persona, human=human or self.prompts.human
        )

    def ingestor(self) -> Ingestor:
        return Ingestor(self.db, self.memory.archival, self.clock)

    def close(self) -> None:
        self.db.close()


def default_embedder() -> Embedder:
    from desktop.core.embedding.sentence_transformer import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def open_services(paths: Paths | None = None, *, embedder: Embedder | None = None, clock: Clock | None = None) -> Services:
    """One connection to the store with everything built on it. A thread doing long work opens its
    own (WAL lets readers and one writer coexist)."""
    paths = (paths or Paths.from_environment()).ensure()
    embedder = embedder or default_embedder()
    db = open_database(paths.database)
    settings_store = SettingsStore(db)
    clock = clock or SystemClock(lambda: user_zone(settings_store))
    # One history for every writer of memory, bounded by a setting read at each write.
    history = MemoryHistory(db, clock, max_changes=lambda: settings_store.load().history_max_changes)
    core = CoreMemory(db, clock, history)
    # The rankers' caches belong to this connection's stores: one vector index, shared by both.
    vectors = VectorIndex(db)
    memory = MemoryServices(
        db=db,
        agents=AgentStore(db, core, clock, paths.files_root),
        core=core,
        recall=RecallMemory(
            db, embedder, ranker=MessageRanker(db, embedder, vectors, user_name=lambda: settings_store.load().user_name), clock=clock
        ),
        archival=ArchivalMemory(db, embedder, clock, ranker=PassageRanker(db, embedder, vectors), history=history),
        clock=clock,
        graph=KnowledgeGraph(db, clock, embedder, history=history),
    )
    return Services(paths, db, clock, Prompts.load(RESOURCES / "prompts"), settings_store, memory, embedder, vectors)


def memory_history(db: Database, clock: Clock) -> MemoryHistory:
    """The memory history on a connection a thread opened for itself (graph extraction), bounded
    by the same setting as the main one's."""
    settings_store = SettingsStore(db)
    return MemoryHistory(db, clock, max_changes=lambda: settings_store.load().history_max_changes)


def user_zone(settings_store: SettingsStore) -> tzinfo:
    """The time_zone setting, else the system's. A name the time zone database no longer knows
    (the setting refuses unknown names) falls back to the system's, with a warning in the log."""
    try:
        return zone_named(settings_store.load().time_zone)
    except ConfigError as error:
        log.warning("time_zone setting ignored: %s", error.user_message)
        return system_zone()


def resolve_model_path(settings: Settings) -> Path:
    from desktop.core.runtime.model_catalog import default_model_path

    return Path(settings.model_path).expanduser() if settings.model_path else default_model_path()


def agent_file_options(services: Services) -> dict:
    """What agent-file exports need from the wiring: the local model, described as Letta's
    LLMConfig, and the knowledge graph's part of the file."""
    from desktop.core.agent.agentfile import local_llm_config
    from desktop.core.agent.agentfile.graph import GraphFileTransfer
    from desktop.core.runtime.model_catalog import DEFAULT_FILE

    settings = services.settings
    if settings.runtime == "openai":
        model = settings.openai_model or "openai-compatible"
    else:
        model = Path(settings.model_path).name if settings.model_path else DEFAULT_FILE
    return {"llm_config": local_llm_config(model, settings.context_size, settings.temperature), "graph": GraphFileTransfer()}


def make_runtime(settings: Settings) -> Runtime:
    """Build the runtime the settings ask for. Imports are local: llama.cpp loads only when used."""
    if settings.runtime == "llamacpp":
        # llama.cpp runs in a child process: a native abort there becomes a ModelError here,
        # never a crash of the window (see desktop/core/runtime/isolated.py).
        from desktop.core.runtime.isolated import isolated_llama
        from desktop.core.runtime.llamacpp_settings import LlamaSettings

        return isolated_llama(
            LlamaSettings(
                model_path=resolve_model_path(settings),
                context_size=settings.context_size,
                threads=settings.threads,
                gpu_layers=settings.gpu_layers,
                chat_template_override=settings.chat_template or None,
                # The system message's KV state survives restarts, so a start does not re-read it.
                cache_dir=Paths.from_environment().kv_cache,
            )
        )
    if settings.runtime == "openai":
        from desktop.core.runtime.openai_http import OpenAIRuntime

        return OpenAIRuntime(
            base_url=settings.openai_base_url, model=settings.openai_model, context_window=settings.context_size, schema_style=settings.openai_schema
        )
    raise ConfigError(f"Unknown runtime {settings.runtime!r}; choose llamacpp or openai")


def open_agent(
    services: Services,
    record: AgentRecord,
    runtime: Runtime,
    *,
    consent: ConsentPolicy | None = None,
    observer: AgentObserver | None = None,
    settings: Settings | None = None,
) -> Agent:
    settings = settings or services.settings
    # Tools an imported agent file brought run only once the user enabled them (and ask each time).
    imported = ImportedTools(services.db, services.clock).enabled_tools(record.id)
    tools = default_registry(load_user_tools(services.paths.user_tools) + imported)
    services.memory.recall.graph_weight = GRAPH_WEIGHT if settings.graph_search_expansion else 0.0
    # The active model's catalog entry refines the defaults; a setting the user chose wins.
    profile = services.models.profile_for(settings)
    chosen = services.settings_store.stored_names()
    return Agent(
        record.id,
        memory=services.memory,
        runtime=runtime,
        tools=tools,
        prompts=services.prompts,
        files=FileSandbox(services.paths.agent_files(record.id)),
        http=HttpPolicy(settings.http_enabled, frozenset(settings.http_allowlist)),
        consent=consent,
        settings=AgentSettings(
            max_steps=settings.max_chained_steps if "max_chained_steps" in chosen else profile.step_cap(settings.max_chained_steps),
            searches_per_turn=settings.max_searches_per_turn,
            heartbeat_minutes=settings.heartbeat_minutes,
            login_after_minutes=settings.login_after_minutes,
            params=profile.sampling_params(settings.sampling(), keep=chosen),
            tool_section=profile.tool_section,
            top_entities=settings.graph_top_entities if settings.graph_extraction else 0,
        ),
        observer=observer,
        recall=open_auto_recall(services, settings),
    )


def recall_sources(services: Services) -> list[MemorySource]:
    """What automatic recall searches, in this order of precedence at equal rank."""
    return [ConversationSource(services.memory.recall), ArchivalSource(services.memory.archival)]


def open_auto_recall(services: Services, settings: Settings) -> AutoRecall | None:
    if not settings.auto_recall:
        return None
    return AutoRecall(
        recall_sources(services),
        RecallSettings(budget_fraction=settings.auto_recall_budget, timeout_ms=settings.auto_recall_timeout_ms),
    )


def open_consolidator(
    services: Services, record: AgentRecord, runtime: Runtime | None, *, settings: Settings | None = None,
    prefix: Callable[[], Sequence[ChatMessage]] | None = None,
) -> Consolidator:
    """The idle-time consolidation pass of one agent, with the agent's own memory functions.
    ``runtime`` may be None to review proposals without a model. ``prefix`` (the open agent's
    ``prompt_prefix``) lets the pass reuse the conversation's KV cache."""
    settings = settings or services.settings
    return Consolidator(
        record.id,
        memory=services.memory,
        runtime=runtime,
        tools=default_registry(load_user_tools(services.paths.user_tools)),
        instructions=services.prompts.consolidation,
        settings=ConsolidationSettings(
            mode=settings.consolidation, every_turns=settings.consolidation_every_turns, params=settings.sampling()
        ),
        prefix=prefix,
    )
