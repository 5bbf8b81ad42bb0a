"""The session's job thread: every job that needs the model or the agent runs here, one at a time,
in the order it was asked for, so ordering and preemption live in one place.

Preemption: a user message never waits behind work nobody asked for. Its job is queued with
``user=True``: a background job that runs (a login, a timed heartbeat, an owed reply, a
consolidation pass) is cancelled at its next token, and one not started yet skips itself
(``begin`` says so). The cancel token of the job that runs is the one Stop and closing cancel.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from memdesk.core.runtime.base import CancelToken

log = logging.getLogger("memdesk.session.jobs")


@dataclass
class Job:
    run: Callable[[], None]
    user: bool = False  # a user message's turn (or a start the user waits for): it goes first
    #: Set once the job ran, or was dropped because the session closed.
    done: threading.Event = field(default_factory=threading.Event)


class JobThread:
    def __init__(self, name: str = "session") -> None:
        self._wake = threading.Condition()
        self._queue: deque[Job] = deque()
        self._running: Job | None = None
        self._closing = False
        self._users_waiting = 0
        self._background = False
        self._stopped_by_user = False
        self._cancel = CancelToken()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    # --- called from any thread ----------------------------------------------------------------
    def submit(self, run: Callable[[], None], *, user: bool = False) -> Job:
        job = Job(run, user)
        with self._wake:
            if self._closing:
                job.done.set()
                return job
            if user:
                self._users_waiting += 1
                if self._background:
                    self._cancel.cancel()  # the user goes first
            self._queue.append(job)
            self._wake.notify_all()
        return job

    def stop(self) -> None:
        """End the current generation (closing, a job that must go first)."""
        self._cancel.cancel()

    def stop_by_user(self) -> None:
        """The user's Stop: the job that runs is cancelled and knows it was the user."""
        with self._wake:
            self._stopped_by_user = True
            self._cancel.cancel()

    @property
    def cancel_token(self) -> CancelToken:
        return self._cancel

    @property
    def users_waiting(self) -> int:
        with self._wake:
            return self._users_waiting

    def idle(self) -> bool:
        """Nothing runs and nothing is queued."""
        with self._wake:
            return self._running is None and not self._queue and not self._closing

    def on_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def close(self, last: Callable[[], None], timeout: float) -> bool:
        """Drop what is queued, cancel what runs, run ``last`` after it, and wait up to ``timeout``
        seconds for the thread to end: whether it did."""
        with self._wake:
            dropped = list(self._queue)
            self._queue.clear()
            self._queue.append(Job(last))
            self._closing = True
            self._cancel.cancel()
            self._wake.notify_all()
        for job in dropped:
            job.done.set()
        if not self._thread.is_alive():
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # --- called on the job thread, by the job that runs ----------------------------------------
    def begin(self, *, background: bool) -> CancelToken | None:
        """A turn starts: its own cancel token, or None when it is background work and a user
        message is queued behind it (it goes first)."""
        with self._wake:
            if background and self._users_waiting:
                return None
            self._cancel = CancelToken()
            if self._closing:
                self._cancel.cancel()
            self._stopped_by_user = False
            self._background = background
            return self._cancel

    def stopped_by_user(self) -> bool:
        with self._wake:
            return self._stopped_by_user

    def end(self) -> None:
        with self._wake:
            self._background = False

    # --- the thread ----------------------------------------------------------------------------
    def _main(self) -> None:
        while True:
            with self._wake:
                self._wake.wait_for(lambda: bool(self._queue))
                job = self._running = self._queue.popleft()
                if job.user:
                    self._users_waiting = max(0, self._users_waiting - 1)
                last = self._closing and not self._queue
            try:
                job.run()
            except BaseException:  # noqa: BLE001 - a job's failure must never end the session
                log.exception("session job failed")
            finally:
                with self._wake:
                    self._running = None
                    self._wake.notify_all()
                job.done.set()
            if last:
                return
