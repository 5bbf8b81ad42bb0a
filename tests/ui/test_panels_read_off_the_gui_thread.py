"""The panels get what they show through the panels' reads (memdesk/ui/workers/reads.py), never from
the store on the GUI thread: a panel shows its data once the read's result arrives, the store is
queried on the reads' own thread meanwhile, and only the newest of several reads is shown."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import QThread

from memdesk.core.memory.revert import Reverter
from memdesk.ui.panels.archival import ArchivalPanel
from memdesk.ui.panels.documents import DocumentsPanel
from memdesk.ui.panels.history import HistoryView
from memdesk.ui.panels.knowledge import KnowledgePanel
from memdesk.ui.panels.memory import CoreMemoryPanel
from memdesk.ui.workers.jobs import Jobs
from memdesk.ui.workers.reads import Reads

STATEMENTS = ("execute", "executemany", "query", "query_one", "scalar")


class StoreThreads:
    """Wraps a store's statements to note the thread each runs on."""

    def __init__(self, db, monkeypatch) -> None:
        self.threads: list[str] = []
        self.recording = False
        for name in STATEMENTS:
            monkeypatch.setattr(db, name, self._noted(getattr(db, name)))

    def _noted(self, statement):
        def run(*args, **kwargs):
            if self.recording:
                self.threads.append(threading.current_thread().name)
            return statement(*args, **kwargs)

        return run

    @property
    def on_the_gui_thread(self) -> int:
        return self.threads.count(threading.main_thread().name)


@pytest.fixture
def agent(services, tmp_path):
    """An agent with something for every panel: blocks, a passage, a document, a graph fact, changes."""
    agent_id = services.create_agent("kim").id
    memory = services.memory
    memory.core.set_value(agent_id, "human", "Likes tea")
    memory.archival.insert(agent_id, "The spare key is under the blue flower pot.")
    note = tmp_path / "garden.txt"
    note.write_text("Tomatoes need sun. " * 40)
    services.ingestor().ingest([note], agent_id, lambda _progress: None, lambda: False)
    memory.graph.insert_fact(agent_id, "Ann", "lives in", "Lisbon", author="user")
    return agent_id


def panels(services, reads: Reads, jobs: Jobs) -> dict:
    memory = services.memory
    reverter = Reverter(memory.core.history, memory.core, memory.archival, memory.graph)
    return {
        "core memory": (CoreMemoryPanel(memory.core, reads, clock=services.clock), lambda p: len(p.editors)),
        "archival": (ArchivalPanel(memory.archival, jobs, reads), lambda p: p.passages_table.rowCount()),
        "documents": (DocumentsPanel(services.db, reads), lambda p: p.table.rowCount()),
        "history": (
            HistoryView(memory.core, memory.recall, reverter, services.clock, reads),
            lambda p: p.table.rowCount(),
        ),
        "knowledge": (KnowledgePanel(memory.graph, reads, reverter=reverter), lambda p: p.entity_table.rowCount()),
    }


@pytest.mark.parametrize("name", ["core memory", "archival", "documents", "history", "knowledge"])
def test_a_panel_shows_what_its_read_returned_and_the_gui_thread_never_queried_the_store(
    qtbot, services, agent, monkeypatch, name
):
    reads, jobs = Reads(), Jobs()
    panel, shown = panels(services, reads, jobs)[name]
    qtbot.addWidget(panel)
    store = StoreThreads(services.db, monkeypatch)
    store.recording = True
    with qtbot.waitSignal(panel.loaded, timeout=10_000):
        panel.set_agent(agent)
        assert shown(panel) == 0  # nothing until the read's result reaches the GUI thread
    qtbot.waitUntil(lambda: not reads.busy, timeout=10_000)
    store.recording = False
    assert shown(panel) > 0
    assert store.threads and store.on_the_gui_thread == 0, store.threads


def test_the_windows_panels_load_an_agent_without_the_gui_thread_querying_the_store(
    make_window, roomy_runtime, qtbot, services, agent, monkeypatch, settle
):
    window = make_window(roomy_runtime)
    store = StoreThreads(services.db, monkeypatch)
    store.recording = True
    for panel in window.panels.of_the_agent:
        panel.set_agent(agent)
    recorded_in_gui = store.on_the_gui_thread
    settle(window)
    store.recording = False
    assert recorded_in_gui == 0 and store.threads, store.threads
    assert "Likes tea" in window.memory.editors["human"].editor.toPlainText()
    assert window.archival.passages_table.rowCount() >= 2 and window.documents.table.rowCount() == 1  # a note, a chunk
    assert "Ann" in [
        window.knowledge.entity_table.item(r, 0).text() for r in range(window.knowledge.entity_table.rowCount())
    ]


def test_only_the_newest_read_under_a_key_is_shown(qtbot):
    reads, shown, release = Reads(), [], threading.Event()
    reads.load("list", lambda: release.wait(10) and "older", shown.append)
    reads.load("list", lambda: "newer", shown.append)
    reads.load("other", lambda: "another key", shown.append)
    release.set()
    with qtbot.waitSignal(reads.idle, timeout=10_000):
        pass
    assert shown == ["newer", "another key"] and not reads.busy


def test_reads_run_on_a_thread_of_their_own_and_not_once_closed(qtbot):
    reads, threads = Reads(), []
    with qtbot.waitSignal(reads.idle, timeout=10_000):
        reads.load("where", lambda: threads.append(QThread.currentThread()), lambda _r: None)
    assert threads and threads[0] is not QThread.currentThread()
    assert reads.close(10_000)
    reads.load("where", lambda: threads.append("after close"), lambda _r: None)
    assert not reads.busy and len(threads) == 1


def test_a_failed_read_reaches_the_error_path(qtbot):
    reads = Reads()

    def broken():
        raise OSError("disk I/O error")

    with qtbot.waitSignal(reads.failed, timeout=10_000) as failure:
        reads.load("broken", broken, lambda _r: None)
    assert isinstance(failure.args[0], OSError)
