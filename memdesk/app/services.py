"""The store's services: one connection to the store and everything built on it (memory, the
history, the rankers' shared vector index), a private chat's in-memory copy, the daily snapshot."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from memdesk.app.store_opening import backups_for, open_store, user_zone
from memdesk.core.base.clock import Clock, SystemClock
from memdesk.core.base.errors import MemDeskError, PassphraseRequiredError, PrivateChatRefusal
from memdesk.core.base.paths import RESOURCES, Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.documents.ingest import Ingestor
from memdesk.core.embedding import Embedder
from memdesk.core.graph.store import KnowledgeGraph
from memdesk.core.memory.agents import AgentRecord, AgentStore
from memdesk.core.memory.archival import ArchivalMemory
from memdesk.core.memory.core_memory import CoreMemory
from memdesk.core.memory.history import MemoryHistory
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.memory.services import MemoryServices
from memdesk.core.models import hub  # noqa: F401 - reads HF_ENDPOINT/HF_HUB_OFFLINE at start-up (see hub.py)
from memdesk.core.models.library import ModelLibrary
from memdesk.core.prompts import Prompts
from memdesk.core.retrieval import MessageRanker, PassageRanker, VectorIndex, learned
from memdesk.core.retrieval.messages import graph_weight
from memdesk.core.storage import Database
from memdesk.core.storage.backup import Backups, Snapshot
from memdesk.core.storage.daily_snapshots import DailySnapshots
from memdesk.core.storage.driver import file_is_encrypted, forget_derived_keys
from memdesk.core.storage.memory_copy import copy_to_memory
from memdesk.core.storage.settings_store import SettingsStore

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
        """A new agent on this store's prompts (see AgentStore.create_new)."""
        return self.agents.create_new(name, self.prompts, persona=persona, human=human)

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

    def __enter__(self) -> Services:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


def default_embedder() -> Embedder:
    """The bundled all-MiniLM-L6-v2, run by NumPy: the window, ingest, history import, the MCP
    server, evaluations and benchmarks all embed through this one."""
    from memdesk.core.embedding.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


def open_services(
    paths: Paths | None = None,
    *,
    key: str | None = None,
    embedder: Embedder | None = None,
    clock: Clock | None = None,
) -> Services:
    """One connection to the store with everything built on it. A thread doing long work opens its
    own (WAL lets readers and one writer coexist), with the same ``key`` (the passphrase of an
    encrypted store)."""
    paths = (paths or Paths.from_environment()).ensure()
    db = open_store(paths, clock, key=key)
    embedder = embedder or default_embedder()
    settings_store = SettingsStore(db)
    clock = clock or SystemClock(lambda: user_zone(settings_store.load))
    # The rankers' caches belong to this connection's stores: one vector index, shared by both.
    vectors = VectorIndex(db)
    memory = _memory_services(db, embedder, clock, settings_store, paths.files_root, vectors)
    return Services(
        paths,
        db,
        clock,
        Prompts.load(RESOURCES / "prompts"),
        settings_store,
        memory,
        embedder,
        vectors=vectors,
    )


#: How a front end asks for an encrypted store's passphrase: ``unlock(store, open_with)`` calls
#: ``open_with(passphrase)`` until the store opens (the window's dialog, the terminal's prompt, each
#: with its own retries), and returns what it opened, or None when the user gave up.
Unlock = Callable[[Path, Callable[[str], Services]], "Services | None"]


def unlock_and_open(
    paths: Paths | None = None,
    *,
    unlock: Unlock | None = None,
    key: str | None = None,
    embedder: Embedder | None = None,
    clock: Clock | None = None,
) -> Services | None:
    """``open_services`` on a store that may be encrypted: plain, or with ``key`` known, it opens
    at once; otherwise its passphrase is asked through ``unlock`` (None: the user gave up)."""
    paths = (paths or Paths.from_environment()).ensure()

    def open_with(passphrase: str | None) -> Services:
        try:
            services = open_services(paths, key=passphrase, embedder=embedder, clock=clock)
        except BaseException:
            forget_derived_keys()  # a wrong passphrase's key is no use to anyone
            raise
        forget_derived_keys(keep=passphrase)
        return services

    if key is not None or not file_is_encrypted(paths.database):
        return open_with(key)
    if unlock is None:
        raise PassphraseRequiredError(f"{paths.database} is encrypted and no passphrase was given")
    return unlock(paths.database, open_with)


def connection_opener(services: Services) -> Callable[[], Services]:
    """Another connection to the store of ``services``, for a thread doing long work: the same
    passphrase and the same embedding model (loaded once)."""
    paths, key, embedder = services.paths, services.key, services.embedder
    return lambda: open_services(paths, key=key, embedder=embedder)


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
        services.paths,
        db,
        services.clock,
        services.prompts,
        settings_store,
        memory,
        services.embedder,
        private=True,
        vectors=vectors,
    )


def _memory_services(
    db: Database,
    embedder: Embedder,
    clock: Clock,
    settings_store: SettingsStore,
    files_root: Path | None,
    vectors: VectorIndex,
) -> MemoryServices:
    # One history for every writer of memory, bounded by a setting read at each write.
    history = MemoryHistory(db, clock, max_changes=lambda: settings_store.load().history_max_changes)
    core = CoreMemory(db, clock, history)
    messages = MessageRanker(
        db, embedder, vectors, user_name=lambda: settings_store.load().user_name, scorer=learned.shipped()
    )
    return MemoryServices(
        db=db,
        agents=AgentStore(db, core, clock, files_root),
        core=core,
        recall=RecallMemory(
            db,
            embedder,
            ranker=messages,
            clock=clock,
            graph_weight=lambda: graph_weight(settings_store.load()),
        ),
        archival=ArchivalMemory(
            db,
            embedder,
            clock,
            ranker=PassageRanker(  # the conversation's speakers: one query vector for both searches
                db, embedder, vectors, speakers=lambda agent_id: messages.speakers(agent_id, [])[0]
            ),
            history=history,
        ),
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


def snapshot_before(services: Services, reason: str) -> Snapshot | None:
    """An automatic snapshot before a change to memory the user may want to take back (an import,
    consolidation, a model switch). A snapshot that cannot be taken does not stop the change: it
    is logged, and the daily snapshot and the earlier ones remain."""
    try:
        return services.backups.create(reason)
    except MemDeskError as error:
        log.warning("no snapshot %s: %s", reason, error.user_message)
        return None
