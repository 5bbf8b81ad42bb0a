"""The knowledge graph's extraction, for every front end: one thread with its own store connection,
so extraction never delays a reply.

After each turn the session nudges it and lends it the chat model with the agent's prompt: the NLP
stage (entities) runs at once, the model's fact stage while the model is lent. Before the session's
next job that needs the model (a turn, a pass, a reload, closing) ``take_back`` cancels a fact call
in progress, waits for it to let go, and the source stays queued for later. A failure of one source
is logged and retried later (memdesk.core.graph.extraction); one of the store stops extraction and
is reported once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from memdesk.core.graph.extraction import ExtractionOptions, GraphExtractor
from memdesk.core.graph.model_facts import ModelFactExtractor
from memdesk.core.runtime.base import CancelToken, ChatMessage, Runtime
from memdesk.core.storage import Database
from memdesk.session.listener import SessionListener

log = logging.getLogger("memdesk.session.graph")


class GraphExtraction:
    def __init__(
        self,
        open_store: Callable[[], Database],
        make_extractor: Callable[[Database], GraphExtractor],
        options: Callable[[Database], ExtractionOptions],
        listener: SessionListener,
    ) -> None:
        """``open_store`` opens the thread's own connection; ``make_extractor`` builds the extractor
        on it (the analyser loads then, on this thread); ``options`` reads the extraction settings
        from the store before each round (they may change while the session runs)."""
        self._open_store = open_store
        self._make_extractor = make_extractor
        self._options = options
        self._listener = listener
        self._wake = threading.Condition()
        self._wanted: dict[int, bool] = {}  # agent -> rebuild first
        self._working = False
        self._closed = False
        # The model lease: set after a turn, taken back before the session's next model job.
        self._lease = threading.Lock()
        self._runtime: Runtime | None = None
        self._prefix: dict[int, list[ChatMessage]] = {}
        self._cancel = CancelToken()
        self._thread = threading.Thread(target=self._main, name="knowledge-graph", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    # --- called from any thread ----------------------------------------------------------------
    def nudge(self, agent_id: int, *, rebuild: bool = False) -> None:
        """Extract what is new for the agent soon (``rebuild``: the agent's graph from scratch first)."""
        with self._wake:
            self._wanted[agent_id] = self._wanted.get(agent_id, False) or rebuild
            self._wake.notify()

    def after_turn(self, agent_id: int, prefix: Sequence[ChatMessage], runtime: Runtime) -> None:
        """Lend the model, note the agent's prompt (the fact calls share its KV cache), and extract."""
        with self._lease:
            self._runtime = runtime
            self._prefix[agent_id] = list(prefix)
            self._cancel = CancelToken()
        self.nudge(agent_id)

    def take_back(self) -> None:
        """Cancel a fact call in progress and wait for it to let go of the model."""
        self._cancel.cancel()
        with self._lease:
            self._runtime = None

    @property
    def lent(self) -> bool:
        return self._runtime is not None

    def wait_until_idle(self, timeout: float) -> bool:
        """Whether everything asked for so far was worked through within ``timeout`` seconds."""
        with self._wake:
            return self._wake.wait_for(lambda: self._closed or not (self._wanted or self._working), timeout)

    def close(self, timeout: float = 10.0) -> bool:
        """Stop at the next check and close the connection; whether the thread ended in time."""
        with self._wake:
            self._closed = True
            self._wake.notify_all()
        self.take_back()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    # --- the graph thread ----------------------------------------------------------------------
    def _main(self) -> None:
        db: Database | None = None
        extractor: GraphExtractor | None = None
        try:
            while True:
                with self._wake:
                    self._working = False
                    self._wake.notify_all()
                    self._wake.wait_for(lambda: self._closed or bool(self._wanted))
                    if self._closed:
                        return
                    wanted, self._wanted = self._wanted, {}
                    self._working = True
                try:
                    if db is None:
                        db = self._open_store()
                    if extractor is None:
                        extractor = self._make_extractor(db)
                    for agent_id, rebuild in wanted.items():
                        self._extract(db, extractor, agent_id, rebuild)
                except Exception as error:  # noqa: BLE001 - the conversation goes on; the next nudge tries again
                    log.warning("knowledge graph extraction stopped", exc_info=error)
                    if not self._closed:
                        self._listener.on_graph_failed(error)
        finally:
            with self._wake:
                self._working = False
                self._wake.notify_all()
            if db is not None:
                db.close()

    def _extract(self, db: Database, extractor: GraphExtractor, agent_id: int, rebuild: bool) -> None:
        extractor.options = self._options(db)
        if rebuild:
            extractor.rebuild(agent_id)
        renamed = extractor.follow_user_name(agent_id)  # a name set since: the user's entity bears it
        extractor.enqueue(agent_id)  # with extraction off, this passes new sources over
        if renamed or rebuild:
            self._listener.on_graph_changed(agent_id)
        if not extractor.options.enabled:
            return
        report = extractor.run_entities(agent_id, should_stop=lambda: self._closed)
        if report.sources:
            self._listener.on_graph_changed(agent_id)
        self._report_pending(extractor, agent_id)
        if extractor.options.model_facts:
            self._model_facts(extractor, agent_id)

    def _model_facts(self, extractor: GraphExtractor, agent_id: int) -> None:
        while not self._closed:
            with self._lease:
                runtime, cancel = self._runtime, self._cancel
                if runtime is None or cancel.cancelled or not extractor.pending(agent_id, "facts", due_only=True):
                    break
                # The lease is held during the call: take_back() waits for the cancelled call to
                # return, so a runtime being closed is never called again.
                report = extractor.run_facts(
                    ModelFactExtractor(runtime),
                    agent_id,
                    limit=1,
                    cancel=cancel,
                    prefix=lambda agent: self._prefix.get(agent, []),
                )
            if report.model_facts:
                self._listener.on_graph_changed(agent_id)
            self._report_pending(extractor, agent_id)
            if not report.sources:
                break

    def _report_pending(self, extractor: GraphExtractor, agent_id: int) -> None:
        self._listener.on_graph_pending(
            agent_id, extractor.pending(agent_id, "entities"), extractor.pending(agent_id, "facts")
        )
