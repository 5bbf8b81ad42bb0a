"""The window's reads of the store, off the GUI thread: a panel or a controller asks for ``read`` and
is handed its result in the GUI thread (``show``), so a slow query (a long history, thousands of
entities, a store another thread is writing) never freezes typing.

The rule for the window: once it is built, no code on the GUI thread queries the store, except
the user's own writes (a message sent, a block saved, a graph correction, a revert, a proposal
applied or rejected, a setting changed), with the check and the read-back that write makes. They
stay on the GUI thread on purpose: a stale-version conflict or a refused write is answered at
once, where the user made it, and what was sent is saved the moment it is accepted. What is shown
afterwards is read here again. Longer work (exports, imports, searches, edits of many rows) runs
on the job pool (jobs.py). tests/ui/test_panels_read_off_the_gui_thread.py drives a session of
the window and fails on any other statement the GUI thread runs that reads.

The reads run one after another on one thread of their own (a pool of one), in the order asked,
through the stores the panels were given: the connection is thread-safe (memdesk.core.storage's
lock), and a read holds it for one short query. Only the newest read asked for under a key (the
panel and what it shows) is shown: a reload asked while an older one ran replaces it, whatever
order they end in. What must follow what earlier reads show asks ``after`` (the session opens an
agent once its conversation's page is shown).

Signals:
    failed(object): a read without its own error callback raised this
    idle(): every read asked for has been shown (or dropped as stale)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from PySide6.QtCore import QObject, Signal

from memdesk.ui.workers.jobs import Jobs

T = TypeVar("T")


class Reads(QObject):
    failed = Signal(object)
    idle = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._jobs = Jobs(self, max_threads=1)
        self._jobs.failed.connect(self.failed)  # a ``show`` that raised
        self._serials = itertools.count(1)
        self._newest: dict[Hashable, int] = {}
        self._asked = 0
        self._closed = False

    def load(
        self,
        key: Hashable,
        read: Callable[[], T],
        show: Callable[[T], Any],
        on_failed: Callable[[BaseException], Any] | None = None,
    ) -> None:
        """Run ``read`` on the reads' thread, then ``show`` its result in this (the GUI) thread,
        unless a newer read was asked under ``key`` meanwhile. Nothing once closed."""
        if self._closed:
            return
        serial = next(self._serials)
        self._newest[key] = serial
        self._asked += 1
        self._jobs.run(
            read,
            lambda result: self._done(key, serial, lambda: show(result)),
            lambda error: self._done(key, serial, lambda: (on_failed or self.failed.emit)(error)),
        )

    def after(self, then: Callable[[], Any]) -> None:
        """Run ``then`` in this (the GUI) thread once every read asked before it has been shown (or
        dropped as stale): a step that must follow what they show, as the session opening an agent
        after its conversation's page is shown."""
        self.load(object(), lambda: None, lambda _nothing: then())

    def _done(self, key: Hashable, serial: int, deliver: Callable[[], Any]) -> None:
        self._asked -= 1
        try:
            if self._newest.get(key) == serial:
                del self._newest[key]
                deliver()
        finally:
            if not self._asked:
                self.idle.emit()

    @property
    def busy(self) -> bool:
        """A read asked for has not been shown yet."""
        return self._asked > 0

    def close(self, msecs: int = 30_000) -> bool:
        """The window closes, and the store after it: no read starts any more, and those running or
        queued are waited for (False: one was still running after ``msecs``)."""
        self._closed = True
        return self._jobs.wait(msecs)
