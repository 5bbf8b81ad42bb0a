"""Extraction on a plain background thread, for front ends without Qt (the terminal chat).

One daemon thread with its own store connection works through the queue after each ``nudge``;
only the NLP stage runs here (the terminal has no idle time to lend the model in). A failure is
logged and the source retried later (memdesk.core.graph.extraction); nothing reaches the chat.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from memdesk.core.base.clock import Clock
from memdesk.core.graph.extraction import ExtractionOptions, GraphExtractor
from memdesk.core.graph.store import ChangeRecorder, KnowledgeGraph
from memdesk.core.storage import Database, open_database

log = logging.getLogger("memdesk.graph.background")

BUSY_TIMEOUT_S = 60.0


class BackgroundExtraction:
    def __init__(
        self,
        database: Path | str,
        analyser_factory: Callable[[], object],
        clock: Clock,
        options: Callable[[], ExtractionOptions],
        embedder=None,
        recorder: Callable[[Database], ChangeRecorder] | None = None,
        key: str | None = None,
        user_name: Callable[[], str] = lambda: "",
    ) -> None:
        """``recorder`` builds the memory history on the thread's own connection (the front end
        passes it in: memory sits above the graph), so the extractor's changes are recorded.
        ``key`` is the passphrase of an encrypted store; ``user_name`` the user's name (the setting),
        which the user's own entity bears."""
        self._database = database
        self._key = key
        self._recorder = recorder
        self._analyser_factory = analyser_factory
        self._clock = clock
        self._options = options
        self._embedder = embedder
        self._user_name = user_name
        self._wanted: set[int] = set()
        self._wake = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="graph-extraction", daemon=True)
        self._thread.start()

    def nudge(self, agent_id: int) -> None:
        """Extract what is new for the agent, soon, without waiting for it."""
        with self._wake:
            self._wanted.add(agent_id)
            self._wake.notify()

    def close(self, timeout: float = 10.0) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join(timeout)

    def _run(self) -> None:
        db = None
        try:
            db = open_database(self._database, key=self._key, busy_timeout=BUSY_TIMEOUT_S)
            history = self._recorder(db) if self._recorder is not None else None
            extractor = GraphExtractor(
                KnowledgeGraph(db, self._clock, self._embedder, history=history),
                self._analyser_factory(),
                self._clock,
                user_name=self._user_name,
            )
            while True:
                with self._wake:
                    while not self._wanted and not self._closed:
                        self._wake.wait()
                    if self._closed:
                        return
                    agents, self._wanted = self._wanted, set()
                options = self._options()
                extractor.options = ExtractionOptions(options.enabled, model_facts=False, document_facts=False)
                for agent_id in agents:
                    extractor.follow_user_name(agent_id)
                    extractor.enqueue(agent_id)
                    if options.enabled:
                        extractor.run_entities(agent_id, should_stop=lambda: self._closed)
        except Exception:  # noqa: BLE001 - the chat goes on without the graph
            log.warning("knowledge graph extraction stopped", exc_info=True)
        finally:
            if db is not None:
                db.close()
