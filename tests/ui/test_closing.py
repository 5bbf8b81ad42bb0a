"""Closing the window while a worker thread is stuck: the app must not abort on the way out."""

from __future__ import annotations

import gc
import threading

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime
from memdesk.ui.window.main_window import MainWindow
from memdesk.ui.workers.threads import OutlivedThreads


def test_a_worker_thread_stuck_past_the_close_wait_is_left_to_finish_instead_of_aborting(services, qtbot, monkeypatch):
    monkeypatch.setattr(MainWindow, "CLOSE_WAIT_MS", 300)
    inside, release = threading.Event(), threading.Event()

    def analyser_that_takes_forever_to_load():  # as spaCy's import can on a saturated machine
        inside.set()
        release.wait(60)
        raise RuntimeError("never mind the analyser")

    embedder = HashingEmbedder()
    outlived = OutlivedThreads()
    window = MainWindow(
        services,
        open_worker_services=lambda: open_services(Paths.from_environment(), embedder=embedder),
        make_runtime=lambda _settings: ScriptedRuntime(context_window=32768),
        warm_embedder=False,
        graph_analyser=analyser_that_takes_forever_to_load,
        outlived=outlived,
    )
    window.show()
    window.start()
    qtbot.waitUntil(inside.is_set, timeout=10_000)
    thread = window.worker.session.graph.thread

    window.close()  # returns after the short wait, the graph thread still inside the "import"
    window.deleteLater()
    QApplication.sendPostedEvents(
        None, QEvent.Type.DeferredDelete
    )  # a running QThread destroyed here aborts the process
    del window
    gc.collect()

    assert thread.is_alive() and outlived.holds(thread) and outlived.running()
    release.set()
    thread.join(10)
    assert not thread.is_alive()
