"""Imports of other assistants' conversations as the session's background work.

An import of years of conversations takes minutes to hours (most of it embedding). It runs on the
session's job thread a slice at a time, as background work: a slice begins only when no user
message waits (``JobThread.begin``), stops after its time or at the next conversation once a
message arrives (the job's cancel token), and queues the next slice behind whatever is queued, so
the message is answered first and the import goes on after. The import's progress is in the store
(memdesk.core.transfer.history.importer): an import a close or a crash cut short resumes when the
agent opens again (``resume``); one the person paused (``pause``) waits for them to go on with it
(``resume_import``), as does one that failed. When one finishes, the imported conversations are read for what
they say about the person (proposals to review), and the knowledge graph is asked to catch up.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from memdesk.core.base.errors import MemDeskError
from memdesk.core.transfer.history.importer import HistoryImport, ImportProgress
from memdesk.core.transfer.history.learning import Learning
from memdesk.core.transfer.history.preview import Selection
from memdesk.session.jobs import JobThread
from memdesk.session.listener import SessionListener
from memdesk.session.parts import StoreServices

log = logging.getLogger("memdesk.session.history")

#: Seconds of import work a slice does before the job thread looks at its queue again.
SLICE_SECONDS = 0.5
#: Messages embedded per step while a session runs the import (a step is what a waiting message
#: may wait for: about a second for 128 on a busy 2-core machine).
EMBED_BATCH = 128


def _resume_import(services: StoreServices, *, import_id: int) -> HistoryImport:
    return HistoryImport.resume(services.memory, import_id)


def _start_import(
    services: StoreServices, *, agent_id: int, path: Path, selection: Selection | None, totals: tuple[int, int]
) -> HistoryImport:
    return HistoryImport.start(services.memory, agent_id, path, selection, totals=totals)


class HistoryJobs:
    def __init__(
        self,
        jobs: JobThread,
        open_services: Callable[[], StoreServices],
        listener: SessionListener,
        *,
        graph_catch_up: Callable[[int], None] = lambda agent_id: None,
        user_name: Callable[[], str] = lambda: "",
        slice_seconds: float = SLICE_SECONDS,
    ) -> None:
        self._jobs = jobs
        self._open_services = open_services
        self._listener = listener
        self._graph_catch_up = graph_catch_up
        self._user_name = user_name
        self._slice_seconds = slice_seconds
        self._services: StoreServices | None = None
        self._waiting: list[Callable[[StoreServices], HistoryImport]] = []
        self._current: HistoryImport | None = None
        # The work in progress, a step at a time: the import's, then the reading for proposals.
        self._steps: Iterator[ImportProgress | int] | None = None
        self._queued = False
        # The person's Stop, asked from any thread and seen at the next step (a conversation, or
        # a batch embedded): the import that runs, and those waiting, are paused.
        self._pause = threading.Event()

    @property
    def running(self) -> bool:
        return self._current is not None or bool(self._waiting)

    # --- asked from any thread ----------------------------------------------------------------
    def start(
        self, agent_id: int, path: Path, selection: Selection | None = None, totals: tuple[int, int] = (0, 0)
    ) -> None:
        """Import ``path`` into the agent in the background (the front end showed its preview;
        ``totals``: the conversations and messages it counted, for the progress and time left)."""
        begin = functools.partial(_start_import, agent_id=agent_id, path=Path(path), selection=selection, totals=totals)
        self._jobs.submit(lambda: self._add(begin))

    def resume(self, agent_id: int) -> None:
        """Go on with the agent's imports a close or a crash cut short."""
        self._jobs.submit(lambda: self._resume(agent_id))

    def resume_import(self, import_id: int) -> None:
        """Go on with an import the person paused, or that failed (its file must be unchanged)."""
        self._jobs.submit(lambda: self._add(functools.partial(_resume_import, import_id=import_id)))

    def pause(self) -> None:
        """The person's Stop: what runs and waits stops at its next step, stays in memory as far as
        it came, and goes on only when resumed."""
        self._pause.set()
        self._jobs.submit(self._paused)

    # --- on the job thread --------------------------------------------------------------------
    def _memory(self) -> StoreServices:
        if self._services is None:
            self._services = self._open_services()
        return self._services

    def _resume(self, agent_id: int) -> None:
        for import_id, _path in HistoryImport.unfinished(self._memory().memory, agent_id):
            self._add(functools.partial(_resume_import, import_id=import_id))

    def _add(self, begin: Callable[[StoreServices], HistoryImport]) -> None:
        self._pause.clear()  # asked after a Stop: a new start or a resume
        self._waiting.append(begin)
        self._queue()

    def _paused(self) -> None:
        """On the job thread, after a Stop: the import that runs is marked paused (resumable)."""
        if not self._pause.is_set():
            return  # started again since
        self._waiting.clear()
        job, self._current, self._steps = self._current, None, None
        if job is not None:
            try:
                job.pause()
                self._listener.on_import_progress(job.progress())
            except MemDeskError as error:
                self._listener.on_failed(error)
        self._release()

    def _release(self) -> None:
        if self._current is None and not self._waiting and self._services is not None:
            self._services.close()
            self._services = None

    def _queue(self) -> None:
        if not self._queued:
            self._queued = True
            self._jobs.submit(self._slice)

    def _slice(self) -> None:
        self._queued = False
        cancel = self._jobs.begin(background=True)
        if cancel is None:  # a message waits behind this: it goes first, the import after it
            self._queue()
            return
        try:
            if self._current is None and not self._next():
                return
            deadline = time.monotonic() + self._slice_seconds
            assert self._steps is not None and self._current is not None
            for step in self._steps:
                if isinstance(step, ImportProgress):
                    self._listener.on_import_progress(step)
                if cancel.cancelled or self._pause.is_set() or time.monotonic() > deadline:
                    break
            else:
                self._finished(self._current)
        except MemDeskError as error:
            self._failed(error)
        except Exception as error:  # noqa: BLE001 - a bug ends this import, never the session
            log.exception("history import failed")
            self._failed(error)
        finally:
            self._jobs.end()
        if self._pause.is_set():
            self._paused()
        elif self._current is not None or self._waiting:
            self._queue()
        else:
            self._release()

    def _next(self) -> bool:
        while self._waiting:
            begin = self._waiting.pop(0)
            try:
                self._current = begin(self._memory())
            except MemDeskError as error:
                self._listener.on_failed(error)
                continue
            self._current.embed_batch = EMBED_BATCH
            learning = Learning(self._memory().memory, user_name=self._user_name())
            self._steps = itertools.chain(self._current.steps(), learning.steps(self._current.agent_id))
            return True
        return False

    def _finished(self, job: HistoryImport) -> None:
        self._current, self._steps = None, None
        waiting = len(Learning(self._memory().memory).pending(job.agent_id))
        self._listener.on_import_finished(job.agent_id, job.id, waiting)
        self._graph_catch_up(job.agent_id)

    def _failed(self, error: Exception) -> None:
        # Paused, not stopped: opening the agent again would only fail again; the person resumes it
        # once what failed is fixed (the file put back, the disk freed).
        job, self._current, self._steps = self._current, None, None
        if job is not None:
            try:
                job.pause()
                self._listener.on_import_progress(job.progress())
            except MemDeskError:
                log.warning("could not mark import %s paused", job.id)
        self._listener.on_failed(error)

    def close(self) -> None:
        """On the job thread, as the session closes: what runs stays resumable; the connection closes."""
        if self._current is not None:
            try:
                self._current.stop()
            except MemDeskError:
                pass
        self._current = self._steps = None
        self._waiting.clear()
        if self._services is not None:
            self._services.close()
            self._services = None
