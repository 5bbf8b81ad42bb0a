"""The daily snapshot (backup.py's ``Backups.create_if_due``) on a thread of its own."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from memdesk.core.storage.backup import BackupCancelled, Backups, Snapshot

log = logging.getLogger("memdesk.backup")


class DailySnapshots:
    """The daily snapshot, taken on a thread of its own so nothing waits for it: ``check()`` when
    the store opens and now and then while it stays open (a new day starts one), ``close()``
    before the store closes (a copy in progress is stopped and leaves nothing)."""

    def __init__(
        self,
        backups: Callable[[], Backups],
        *,
        on_taken: Callable[[Snapshot], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._backups = backups
        self._on_taken = on_taken
        self._on_error = on_error
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()

    def check(self) -> bool:
        """Start the day's snapshot if it is due and none is being taken; True when one started."""
        with self._guard:
            if self._stop.is_set() or (self._thread is not None and self._thread.is_alive()):
                return False
            self._thread = threading.Thread(target=self._run, name="daily-snapshot", daemon=False)
            self._thread.start()
            return True

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def close(self) -> None:
        self._stop.set()
        self.wait()

    def _progress(self, _done: int, _total: int) -> None:
        if self._stop.is_set():
            raise BackupCancelled

    def _run(self) -> None:
        try:
            snapshot = self._backups().create_if_due(progress=self._progress)
        except BackupCancelled:
            log.info("daily snapshot stopped: the store is closing")
            return
        except BaseException as error:  # noqa: BLE001 - reported, never lost in a thread
            log.warning("daily snapshot failed: %s", getattr(error, "user_message", error))
            if self._on_error is not None:
                self._on_error(error)
            return
        if snapshot is not None and self._on_taken is not None:
            self._on_taken(snapshot)
