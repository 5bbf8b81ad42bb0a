"""Waiting for a worker thread's signal cannot hang a test (see tests/ui/conftest.py)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QMetaObject, QObject, Qt, QThread, Signal, Slot


class Worker(QObject):
    finished = Signal(bool, object)

    @Slot()
    def work(self) -> None:
        self.finished.emit(True, {"chunks": 3})


@pytest.fixture
def worker():
    """A worker living in its own thread, as the window's are."""
    thread = QThread()
    worker = Worker()
    worker.moveToThread(thread)
    thread.start()
    yield worker
    thread.quit()
    thread.wait(5_000)


def finish_in_its_thread(worker: Worker) -> None:
    """The worker emits ``finished`` in its own thread; returns once it has."""
    QMetaObject.invokeMethod(worker, "work", Qt.ConnectionType.BlockingQueuedConnection)


class FinishAsTheLoopStarts:
    """Stands in for a blocker's event loop: the worker finishes just before the loop runs, after
    pytest-qt's checks that the signal has not fired yet -- the narrow moment of the race."""

    def __init__(self, loop, worker: Worker) -> None:
        self.loop, self.worker = loop, worker

    def exec(self) -> int:
        finish_in_its_thread(self.worker)
        return self.loop.exec()

    def quit(self) -> None:
        self.loop.quit()


@pytest.mark.timeout(60)
def test_a_worker_signal_fired_as_the_wait_begins_ends_the_wait(wait_for_signal, worker):
    # With qtbot.waitSignal(worker.finished) this waits forever: the blocker runs in the worker's
    # thread, quits a loop not yet started and disarms the timeout timer.
    with wait_for_signal(worker.finished, timeout=5_000) as blocker:
        blocker._loop = FinishAsTheLoopStarts(blocker._loop, worker)
    assert blocker.signal_triggered and blocker.args == [True, {"chunks": 3}]


@pytest.mark.timeout(60)
def test_a_worker_signal_fired_before_the_wait_and_one_never_fired(wait_for_signal, worker):
    with wait_for_signal(worker.finished, timeout=5_000) as blocker:
        finish_in_its_thread(worker)
    assert blocker.args == [True, {"chunks": 3}]
    with wait_for_signal(worker.finished, timeout=200, raising=False) as blocker:
        pass
    assert not blocker.signal_triggered


def test_the_guard_sees_a_blocker_called_from_another_thread(qtbot, worker, waits_are_answered_in_the_gui_thread):
    with qtbot.waitSignal(worker.finished, timeout=5_000):
        finish_in_its_thread(worker)
    seen = waits_are_answered_in_the_gui_thread
    assert len(seen) == 1
    seen.clear()  # else the guard fails this test
