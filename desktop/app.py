"""The composition root: the one place that builds MemDesk's objects and wires them together.

Front ends (the CLI, the Qt window) call ``open_services`` once, then ``make_runtime`` and
``open_agent``; nothing else constructs stores or runtimes, and nothing looks them up globally.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from desktop.core.agent.agents import AgentRecord, AgentStore
from desktop.core.agent.consolidation.consolidator import Consolidator
from desktop.core.agent.consolidation.modes import ConsolidationSettings
from desktop.core.agent.auto_recall import ArchivalSource, AutoRecall, ConversationSource, MemorySource, RecallSettings
from desktop.core.agent.recall_versions import newest_first
from desktop.core.agent.loop import Agent, AgentSettings, MemoryServices
from desktop.core.agent.observer import AgentObserver
from desktop.core.clock import Clock, SystemClock
from desktop.core.documents.ingest import Ingestor
from desktop.core.embedding import Embedder
from desktop.core.graph.store import KnowledgeGraph
from desktop.core.retrieval.messages import GRAPH_WEIGHT
from desktop.core.memory.archival import ArchivalMemory
from desktop.core.memory.core_memory import CoreMemory
from desktop.core.memory.history import APP, USER, MemoryHistory
from desktop.core.memory.recall import RecallMemory
from desktop.core.models import hub  # noqa: F401 - reads HF_ENDPOINT/HF_HUB_OFFLINE at start-up (see hub.py)
from desktop.core.models.library import ModelLibrary
from desktop.core.prompts import Prompts
from desktop.core.retrieval import MessageRanker, PassageRanker, VectorIndex
from desktop.core.runtime.base import ChatMessage, Runtime
from desktop.core.runtime.private import PrivateRuntime
from desktop.core.storage import Database
from desktop.core.storage.backup import Backups, Snapshot
from desktop.core.storage.daily_snapshots import DailySnapshots
from desktop.core.storage.memory_copy import copy_to_memory
from desktop.core.tools.builtin import default_registry
from desktop.core.tools.context import ConsentPolicy
from desktop.core.tools.files import FileSandbox
from desktop.core.tools.http import HttpPolicy
from desktop.core.tools.imported import ImportedTools
from desktop.core.tools.registry import ToolRegistry, load_user_tools
from desktop.errors import ConfigError, MemDeskError, PrivateChatRefusal, ToolError
from desktop.local_model import StartedModel, same_runtime, start_local_model
from desktop.local_model import resolve_model_path  # noqa: F401 - the front ends take it from here
from desktop.paths import RESOURCES, Paths
from desktop.settings import Settings, SettingsStore, sampling
from desktop.store_opening import backups_for, open_store, user_zone

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
    #: A private chat's services: an in-memory copy of the store that closing discards.
    private: bool = False
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
        """Without ``persona``, the default one written for ``name``. A block whose text is
        MemDesk's default (given or not) is recorded as written by the app, not by the user."""
        default_persona, default_human = self.prompts.persona_for(name), self.prompts.human
        persona, human = persona or default_persona, human or default_human
        return self.agents.create(
            name, system_prompt=self.prompts.system, persona=persona, human=human,
            persona_source=APP if persona == default_persona else USER, human_source=APP if human == default_human else USER,
        )

    @property
    def key(self) -> str | None:
        """The store's passphrase (in memory only), None for a plain store: pass it to every other
        connection or file opened on this store."""
        return self.db.key

    @property
    def backups(self) -> Backups:
        """The store's snapshots, where the settings say, kept as they say (read afresh each time)."""
        return backups_for(self.paths, self.settings, self.clock, key=self.db.key)

    def ingestor(self) -> Ingestor:
        if self.private:
            raise PrivateChatRefusal(
                "Documents cannot be added during a private chat: nothing of it is saved",
                hint="end the private chat, then add the documents to keep them",
            )
        return Ingestor(self.db, self.memory.archival, self.clock)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Services":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


def default_embedder() -> Embedder:
    from desktop.core.embedding.sentence_transformer import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def open_services(
    paths: Paths | None = None, *, key: str | None = None, embedder: Embedder | None = None, clock: Clock | None = None
) -> Services:
    """One connection to the store with everything built on it. A thread doing long work opens its
    own (WAL lets readers and one writer coexist), with the same ``key`` (the passphrase of an
    encrypted store)."""
    paths = (paths or Paths.from_environment()).ensure()
    db = open_store(paths, clock, key=key)
    embedder = embedder or default_embedder()
    settings_store = SettingsStore(db)
    clock = clock or SystemClock(lambda: user_zone(settings_store))
    # The rankers' caches belong to this connection's stores: one vector index, shared by both.
    vectors = VectorIndex(db)
    memory = _memory_services(db, embedder, clock, settings_store, paths.files_root, vectors)
    return Services(paths, db, clock, Prompts.load(RESOURCES / "prompts"), settings_store, memory, embedder, vectors=vectors)


def open_private_services(services: Services) -> Services:
    """A private chat's services: the same agents and memories, read from an in-memory copy of the
    store, so every write of the agent loop (messages, memory edits, archival inserts, history,
    graph) works unchanged and none reaches the file. ``close`` discards the copy. The clock keeps
    reading the saved time zone setting."""
    db = copy_to_memory(services.db)
    settings_store = SettingsStore(db)
    # No files folder: the copy's agents are the saved ones, whose files a delete here must not touch.
    vectors = VectorIndex(db)
    memory = _memory_services(db, services.embedder, services.clock, settings_store, None, vectors)
    return Services(
        services.paths, db, services.clock, services.prompts, settings_store, memory, services.embedder, private=True, vectors=vectors
    )


def _memory_services(
    db: Database, embedder: Embedder, clock: Clock, settings_store: SettingsStore, files_root: Path | None, vectors: VectorIndex
) -> MemoryServices:
    # One history for every writer of memory, bounded by a setting read at each write.
    history = MemoryHistory(db, clock, max_changes=lambda: settings_store.load().history_max_changes)
    core = CoreMemory(db, clock, history)
    return MemoryServices(
        db=db,
        agents=AgentStore(db, core, clock, files_root),
        core=core,
        recall=RecallMemory(
            db, embedder, ranker=MessageRanker(db, embedder, vectors, user_name=lambda: settings_store.load().user_name), clock=clock
        ),
        archival=ArchivalMemory(db, embedder, clock, ranker=PassageRanker(db, embedder, vectors), history=history),
        clock=clock,
        graph=KnowledgeGraph(db, clock, embedder, history=history),
    )


def daily_snapshots(services: Services, **callbacks) -> DailySnapshots:
    """The daily snapshot of the services' store, on its own thread (see DailySnapshots)."""
    return DailySnapshots(lambda: services.backups, **callbacks)


def memory_history(db: Database, clock: Clock) -> MemoryHistory:
    """The memory history on a connection a thread opened for itself (graph extraction), bounded
    by the same setting as the main one's."""
    settings_store = SettingsStore(db)
    return MemoryHistory(db, clock, max_changes=lambda: settings_store.load().history_max_changes)


def open_forgetting(services: Services, backups=None, *, db: Database | None = None):
    """Forget (desktop.core.agent.forget) on this store: its history, graph caches, the prompt KV
    cache folder, and ``backups`` (the store's snapshots, to list and purge; None: none). ``db``: a
    connection the calling thread opened for itself (the window's, so the VACUUM at the end does
    not hold the connection the panels read through)."""
    from desktop.core.agent.forget import Forgetting

    memory = services.memory
    history = memory.archival.history if db is None else memory_history(db, services.clock)
    return Forgetting(
        db or services.db, services.clock, embedder=services.embedder, history=history, graph=memory.graph,
        kv_cache=services.paths.kv_cache, logs=services.paths.logs, backups=backups, threshold=services.settings.forget_similarity,
    )


def open_retention(services: Services, *, db: Database | None = None):
    """Retention (desktop.core.agent.forget.retention) on this store, or on ``db``."""
    from desktop.core.agent.forget.retention import Retention

    history = services.memory.archival.history if db is None else memory_history(db, services.clock)
    return Retention(db or services.db, services.clock, history=history, kv_cache=services.paths.kv_cache)




def agent_file_options(services: Services) -> dict:
    """What agent-file exports need from the wiring: the local model, described as Letta's
    LLMConfig, and the knowledge graph's part of the file."""
    from desktop.core.agent.agentfile import local_llm_config
    from desktop.core.agent.agentfile.graph import GraphFileTransfer
    from desktop.core.models.bundled import DEFAULT_FILE

    settings = services.settings
    if settings.runtime == "openai":
        model = settings.openai_model or "openai-compatible"
    else:
        model = Path(settings.model_path).name if settings.model_path else DEFAULT_FILE
    return {"llm_config": local_llm_config(model, settings.context_size, settings.temperature), "graph": GraphFileTransfer()}


def make_runtime(settings: Settings, *, key: str | None = None) -> Runtime:
    """Build the runtime the settings ask for. Imports are local: llama.cpp loads only when used.
    ``key``: the store's passphrase, when it is encrypted; the KV states saved on disk (which hold
    the prompt's memory) are then encrypted with it."""
    if settings.runtime == "llamacpp":
        return start_local_model(settings, key=key)
    if settings.runtime == "openai":
        from desktop.core.runtime.openai_http import OpenAIRuntime

        return OpenAIRuntime(
            base_url=settings.openai_base_url, model=settings.openai_model, context_window=settings.context_size, schema_style=settings.openai_schema
        )
    raise ConfigError(f"Unknown runtime {settings.runtime!r}; choose llamacpp or openai")


def runtime_factory(key: str | None, factory: Callable[..., Runtime] = make_runtime) -> Callable[[Settings], Runtime]:
    """``make_runtime`` for a store opened with ``key`` (the front ends pass settings only)."""
    return factory if key is None else lambda settings: factory(settings, key=key)


class RuntimeAhead:
    """A runtime factory whose first runtime was started before anyone asked for it: the window
    starts the local model's process before it builds itself (or takes the one ``memdesk``
    started before importing the window: ``started``, see desktop.local_model), so the
    interpreter, llama.cpp and the weights load while Qt builds and paints, not after. Asked
    first for other settings (changed meanwhile), it closes the early runtime and builds anew;
    ``discard`` closes one nobody took (a window closed before its model loaded). Only a local
    model is started ahead: an HTTP runtime costs nothing to build, and is not built before the
    window asks."""

    def __init__(self, factory: Callable[[Settings], Runtime], settings: Settings, *, started: StartedModel | None = None) -> None:
        self._factory = factory
        self._lock = threading.Lock()  # taken by the window's worker thread, discarded by the GUI thread
        self._early: tuple[Settings, Runtime] | None = None
        if settings.runtime != "llamacpp":
            if started is not None:
                started.discard()
            return
        early = started.take(settings) if started is not None else None
        try:
            self._early = (settings, early or factory(settings))
        except Exception:  # noqa: BLE001 - the worker's own attempt meets it again and reports it in the window
            log.debug("the model was not started ahead", exc_info=True)

    def __call__(self, settings: Settings) -> Runtime:
        with self._lock:
            early, self._early = self._early, None
        if early is not None:
            if same_runtime(early[0], settings):
                return early[1]
            early[1].close()
        return self._factory(settings)

    def discard(self) -> None:
        with self._lock:
            early, self._early = self._early, None
        if early is not None:
            early[1].close()


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
    if services.private:
        # Asked of every request: the runtime is shared with the saved conversation.
        runtime, tools = PrivateRuntime(runtime), _without_file_writes(tools)
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
            params=profile.sampling_params(sampling(settings), keep=chosen),
            tool_section=profile.tool_section,
            thoughts_chars=settings.max_thought_chars if "max_thought_chars" in chosen else profile.thoughts_chars or settings.max_thought_chars,
            hidden_functions=frozenset(profile.hidden_functions),
            top_entities=settings.graph_top_entities if settings.graph_extraction else 0,
        ),
        observer=observer,
        recall=open_auto_recall(services, settings),
    )


#: Built-in functions that write outside the store, which a private chat must not.
FILE_WRITING_TOOLS = ("append_to_text_file",)


def _without_file_writes(tools: ToolRegistry) -> ToolRegistry:
    """The same functions (so the prompt, and its cached state, stay those of the saved chat), with
    those that write files refusing before the user is even asked."""

    def refuse(ctx, **arguments) -> None:
        raise ToolError("Nothing is written to files during a private chat; the user can save it themselves")

    for name in FILE_WRITING_TOOLS:
        tool = tools.resolve(name)
        if tool is not None:
            tools.replace(replace(tool, check=refuse))
    return tools


def recall_sources(services: Services) -> list[MemorySource]:
    """What automatic recall searches, in this order of precedence at equal rank."""
    return [ConversationSource(services.memory.recall), ArchivalSource(services.memory.archival)]


def open_auto_recall(services: Services, settings: Settings) -> AutoRecall | None:
    if not settings.auto_recall:
        return None
    return AutoRecall(
        recall_sources(services),
        RecallSettings(budget_fraction=settings.auto_recall_budget, timeout_ms=settings.auto_recall_timeout_ms),
        order=newest_first,
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
            mode=settings.consolidation, every_turns=settings.consolidation_every_turns, params=sampling(settings)
        ),
        prefix=prefix,
        before_apply=lambda: snapshot_before(services, "before applying consolidation"),
    )


def snapshot_before(services: Services, reason: str) -> Snapshot | None:
    """An automatic snapshot before a change to memory the user may want to take back (an import,
    consolidation, a model switch). A snapshot that cannot be taken does not stop the change: it
    is logged, and the daily snapshot and the earlier ones remain."""
    try:
        return services.backups.create(reason)
    except MemDeskError as error:
        log.warning("no snapshot %s: %s", reason, error.user_message)
        return None


def import_agent_path(services: Services, path: Path, *, name: str | None = None):
    """Import an agent file (either format), after a snapshot of the store; returns the summary."""
    from desktop.core.agent.agentfile.files import import_path

    path = Path(path)
    snapshot_before(services, f"before import of {path.name}")
    return import_path(services, path, name=name, graph=agent_file_options(services)["graph"])
