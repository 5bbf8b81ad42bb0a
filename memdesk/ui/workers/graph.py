"""The knowledge graph's extraction worker: a QObject in its own thread with its own store
connection (like the ingestion worker), so extraction never delays a reply.

After each agent turn the agent worker hands over (in its own thread) the agent's prompt and the
runtime: the NLP stage runs at once, the chat model's fact stage while the model is idle. Before
the next turn (or a model reload, or shutdown) ``preempt`` takes the model back: a fact call in
progress is cancelled and its source stays queued for later.

Signals:
    changed(int): the agent's graph changed
    pending(int, int): the agent's queued sources (entities stage, facts stage)
    failed(object): an error that stopped extraction as a whole (the store failed); per-source
        failures are only logged and retried
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QThread, Signal, Slot

from memdesk.core.base.clock import Clock
from memdesk.core.graph.extraction import ExtractionOptions, GraphExtractor
from memdesk.core.graph.model_facts import ModelFactExtractor
from memdesk.core.graph.store import KnowledgeGraph
from memdesk.core.memory.history import MemoryHistory
from memdesk.core.runtime.base import CancelToken, ChatMessage, Runtime
from memdesk.core.storage import Database, open_database
from memdesk.core.storage.settings_store import SettingsStore
from memdesk.ui.common.errors import reports_errors

log = logging.getLogger("memdesk.ui.graph")

#: The agent's step transaction may hold the write lock while a tool runs; wait rather than fail.
GRAPH_BUSY_TIMEOUT_S = 60.0


class GraphWorker(QObject):
    changed = Signal(int)
    pending = Signal(int, int, int)
    failed = Signal(object)
    _nudged = Signal(int)

    def __init__(
        self,
        database_path: Path | str,
        analyser_factory: Callable[[], object],
        clock: Clock,
        embedder=None,
        *,
        busy_timeout: float = GRAPH_BUSY_TIMEOUT_S,
        key: str | None = None,
    ) -> None:
        super().__init__()
        self._database_path = database_path
        self._key = key  # the passphrase of an encrypted store, for this thread's own connection
        self._analyser_factory = analyser_factory
        self._clock = clock
        self._embedder = embedder
        self._busy_timeout = busy_timeout
        self._db: Database | None = None
        self._extractor: GraphExtractor | None = None
        # The model lease: set after a turn, taken back before the next one.
        self._lease = threading.Lock()
        self._runtime: Runtime | None = None
        self._prefix: dict[int, list[ChatMessage]] = {}
        self._cancel = CancelToken()
        self._nudged.connect(self.extract)
        self.stopped = False

    # --- called from the agent worker's thread -------------------------------------------------
    def after_turn(self, agent) -> None:
        """Lend the model and note the agent's prompt, then queue extraction (thread-safe)."""
        try:
            prefix = agent.prompt_prefix()
        except Exception:  # noqa: BLE001 - a missing prefix only costs the KV cache reuse
            log.debug("no prompt prefix for the graph", exc_info=True)
            prefix = []
        with self._lease:
            self._runtime = agent.runtime
            self._prefix[agent.id] = prefix
            self._cancel = CancelToken()
        self._nudged.emit(agent.id)

    def preempt(self) -> None:
        """Take the model back: cancel a fact call in progress and wait for it to let go."""
        self._cancel.cancel()
        with self._lease:
            self._runtime = None

    # --- slots (run in the graph thread) --------------------------------------------------------
    def _store(self) -> GraphExtractor:
        if self._extractor is None:
            self._db = open_database(self._database_path, key=self._key, busy_timeout=self._busy_timeout)
            store = SettingsStore(self._db)
            # The extractor's facts and entities are recorded in the memory history, like every writer's.
            history = MemoryHistory(self._db, self._clock, max_changes=lambda: store.load().history_max_changes)
            graph = KnowledgeGraph(self._db, self._clock, self._embedder, history=history)
            self._extractor = GraphExtractor(
                graph, self._analyser_factory(), self._clock, user_name=lambda: store.load().user_name
            )
        assert self._db is not None
        settings = SettingsStore(self._db).load()
        self._extractor.options = ExtractionOptions(
            settings.graph_extraction, settings.graph_model_facts, settings.graph_document_facts
        )
        return self._extractor

    @Slot(int)
    @reports_errors
    def extract(self, agent_id: int) -> None:
        """Queue what is new for the agent and work through the queue."""
        if self.stopped:
            return
        try:
            extractor = self._store()
            renamed = extractor.follow_user_name(agent_id)  # a name set since: the user's entity bears it
            extractor.enqueue(agent_id)  # with extraction off, this passes new sources over
            if renamed:
                self.changed.emit(agent_id)
            if not extractor.options.enabled:
                return
            report = extractor.run_entities(agent_id, should_stop=lambda: self.stopped)
            if report.sources:
                self.changed.emit(agent_id)
            self._emit_pending(agent_id)
            if extractor.options.enabled and extractor.options.model_facts:
                self._model_facts(extractor, agent_id)
        except Exception as error:  # noqa: BLE001 - reported once on the message bar
            log.warning("knowledge graph extraction stopped", exc_info=error)
            self.failed.emit(error)

    def _model_facts(self, extractor: GraphExtractor, agent_id: int) -> None:
        while not self.stopped:
            with self._lease:
                runtime, cancel = self._runtime, self._cancel
                if runtime is None or cancel.cancelled or not extractor.pending(agent_id, "facts", due_only=True):
                    break
                # The lease is held during the call: preempt() waits for the cancelled call to
                # return, so a runtime being closed is never called again.
                report = extractor.run_facts(
                    ModelFactExtractor(runtime),
                    agent_id,
                    limit=1,
                    cancel=cancel,
                    prefix=lambda agent: self._prefix.get(agent, []),
                )
            if report.model_facts:
                self.changed.emit(agent_id)
            self._emit_pending(agent_id)
            if not report.sources:
                break

    def _emit_pending(self, agent_id: int) -> None:
        if self._extractor is not None:
            self.pending.emit(
                agent_id, self._extractor.pending(agent_id, "entities"), self._extractor.pending(agent_id, "facts")
            )

    @Slot(int)
    @reports_errors
    def rebuild(self, agent_id: int) -> None:
        try:
            self._store().rebuild(agent_id)
        except Exception as error:  # noqa: BLE001
            self.failed.emit(error)
            return
        self.extract(agent_id)

    @Slot()
    @reports_errors
    def shutdown(self) -> None:
        self.stopped = True
        self.preempt()
        if self._db is not None:
            self._db.close()
            self._db = None
        QThread.currentThread().quit()


def default_analyser():
    from memdesk.core.graph.nlp import SpacyAnalyser

    return SpacyAnalyser()
