"""The one idle scheduler: when work nobody asked for falls due.

Each kind of idle work (a timed heartbeat, a consolidation pass, retention) falls due once its idle
time has passed since the last activity (``touch``: a turn ended, the model or the agent opened, the
settings changed, the user sent a message). Due, it runs once until the next activity. Its runner
may answer ``AGAIN``: it could not run now (the conversation was busy) or met the store held by
another writer past its busy timeout, which is nothing the user can act on: it falls due again a
whole idle time later. What each kind of work does is the session's (memdesk.session.unasked);
this module only keeps the time, on one thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from memdesk.core.base.settings_table import Settings
from memdesk.core.consolidation.modes import OFF

log = logging.getLogger("memdesk.session.idle")

HEARTBEAT, CONSOLIDATION, RETENTION = "heartbeat", "consolidation", "retention"
KINDS = (HEARTBEAT, CONSOLIDATION, RETENTION)

DONE, AGAIN = "done", "again"


@dataclass(frozen=True)
class IdleIntervals:
    """Seconds of idle time before each kind of work; 0 turns it off."""

    heartbeat: float = 0.0
    consolidation: float = 0.0
    retention: float = 0.0

    @classmethod
    def from_settings(cls, settings: Settings) -> IdleIntervals:
        """Timed heartbeats every ``heartbeat_minutes``; consolidation (unless off) and retention
        after ``consolidation_idle_minutes``."""
        idle = settings.consolidation_idle_minutes * 60.0
        return cls(
            heartbeat=settings.heartbeat_minutes * 60.0,
            consolidation=0.0 if settings.consolidation == OFF else idle,
            retention=idle,
        )

    def of(self, kind: str) -> float:
        return float(getattr(self, kind))


class IdleScheduler:
    def __init__(self, intervals: Callable[[], IdleIntervals], run: Callable[[str], str]) -> None:
        """``intervals`` is read at each activity; ``run(kind)`` runs on the scheduler's thread
        when the work falls due and answers DONE or AGAIN."""
        self._intervals = intervals
        self._run = run
        self._wake = threading.Condition()
        self._due_at: dict[str, float] = {}  # kind -> monotonic time it falls due
        self._armed: dict[str, float] = {}  # kind -> its idle time, while armed
        self._now: set[str] = set()
        self._closed = False
        self._thread = threading.Thread(target=self._main, name="idle-scheduler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    def touch(self) -> None:
        """Activity: every kind of idle work counts its idle time from now."""
        intervals = self._intervals()
        with self._wake:
            now = time.monotonic()
            self._due_at.clear()
            self._armed.clear()
            for kind in KINDS:
                seconds = intervals.of(kind)
                if seconds > 0:
                    self._due_at[kind] = now + seconds
                    self._armed[kind] = seconds
            self._wake.notify()

    def again(self, kind: str) -> None:
        """``kind`` could not do its work: it falls due again a whole idle time from now (unless
        off by now)."""
        seconds = self._intervals().of(kind)
        with self._wake:
            if seconds > 0:
                self._due_at[kind] = time.monotonic() + seconds
                self._armed[kind] = seconds
                self._wake.notify()

    def run_now(self, kind: str) -> None:
        """Run ``kind`` on the scheduler's thread now, whatever the idle time."""
        with self._wake:
            self._now.add(kind)
            self._wake.notify()

    def armed(self, kind: str) -> float | None:
        """The idle time ``kind`` is counting down (seconds), or None when it is not."""
        with self._wake:
            return self._armed.get(kind) if kind in self._due_at else None

    def close(self, timeout: float = 10.0) -> bool:
        with self._wake:
            self._closed = True
            self._wake.notify()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _main(self) -> None:
        while True:
            with self._wake:
                due = self._take_due()
                while not due and not self._closed:
                    next_at = min(self._due_at.values(), default=None)
                    self._wake.wait(None if next_at is None else max(0.0, next_at - time.monotonic()))
                    due = self._take_due()
                if self._closed:
                    return
            for kind in due:
                try:
                    outcome = self._run(kind)
                except Exception:  # noqa: BLE001 - idle work must never stop the scheduler
                    log.exception("idle %s failed", kind)
                    outcome = DONE
                if outcome == AGAIN:
                    log.info("idle %s could not run; it runs again at the next idle moment", kind)
                    self.again(kind)

    def _take_due(self) -> list[str]:
        now = time.monotonic()
        due = [kind for kind in KINDS if kind in self._now or self._due_at.get(kind, now + 1) <= now]
        for kind in due:
            self._now.discard(kind)
            self._due_at.pop(kind, None)
            self._armed.pop(kind, None)
        return due
