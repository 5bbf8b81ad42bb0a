"""The panels get what they show through the panels' reads (memdesk/ui/workers/reads.py), never from
the store on the GUI thread: a panel shows its data once the read's result arrives, the store is
queried on the reads' own thread meanwhile, and only the newest of several reads is shown. The whole
window keeps to it through a session (opening, switching agents, paging back, going to a message,
exporting, reviewing proposals): the GUI thread writes what the user did, and reads nothing."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from PySide6.QtCore import Qt, QThread, QUrl
from PySide6.QtWidgets import QFileDialog

from memdesk.core.consolidation.store import PENDING, ConsolidationStore
from memdesk.core.memory.history import AGENT, Cause
from memdesk.core.memory.revert import Reverter
from memdesk.core.runtime.scripted import say
from memdesk.ui.panels.archival import ArchivalPanel
from memdesk.ui.panels.documents import DocumentsPanel
from memdesk.ui.panels.history import HistoryView
from memdesk.ui.panels.knowledge import KnowledgePanel
from memdesk.ui.panels.memory import CoreMemoryPanel
from memdesk.ui.workers.jobs import Jobs
from memdesk.ui.workers.reads import Reads
from tests.ui.test_knowledge import click_entity

STATEMENTS = ("execute", "executemany", "query", "query_one", "scalar")


class StoreThreads:
    """Wraps a store's statements to note the thread each runs on, and what it was."""

    def __init__(self, db, monkeypatch) -> None:
        self.threads: list[str] = []
        self.statements: list[tuple[str, str, bool]] = []  # (thread, SQL, part of the user's write)
        self.recording = False
        self._writing = False
        for name in STATEMENTS:
            monkeypatch.setattr(db, name, self._noted(getattr(db, name)))

    def _noted(self, statement):
        def run(sql, *args, **kwargs):
            if self.recording:
                thread = threading.current_thread().name
                self.threads.append(thread)
                self.statements.append((thread, " ".join(str(sql).split()), self._writing))
            return statement(sql, *args, **kwargs)

        return run

    @contextmanager
    def users_write(self) -> Iterator[None]:
        """What the GUI thread runs meanwhile is the user's own write, made at once on purpose (its
        check and what it returns included): the writes the rule allows there."""
        self._writing = True
        try:
            yield
        finally:
            self._writing = False

    @property
    def on_the_gui_thread(self) -> int:
        return self.threads.count(threading.main_thread().name)

    @property
    def reads_on_the_gui_thread(self) -> list[str]:
        """The queries the GUI thread ran, but for those of the user's own writes."""
        gui = threading.main_thread().name
        return [sql for thread, sql, write in self.statements if thread == gui and not write and _reads(sql)]

    @property
    def users_writes_on_the_gui_thread(self) -> list[str]:
        gui = threading.main_thread().name
        return [sql for thread, sql, write in self.statements if thread == gui and write and not _reads(sql)]


def _reads(sql: str) -> bool:
    sql = sql.upper()
    return sql.startswith(("SELECT", "WITH")) or (sql.startswith("PRAGMA") and "=" not in sql)


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


@pytest.fixture
def long_agent(services, tmp_path):
    """An agent with a conversation of several pages, a memory change and a fact whose source is
    an old message, a passage, a proposal waiting for review; and a second agent."""
    agent = services.create_agent("Companion")
    services.settings_store.set("last_agent", agent.name)
    memory, at = services.memory, services.clock.now() - timedelta(days=1)
    messages = []
    for n in range(30):
        messages.append(
            memory.recall.add(
                agent.id,
                role="user",
                kind="user_message",
                content=json.dumps({"type": "user_message", "message": f"question {n}"}),
                search_text=f"question {n}",
                created_at=at + timedelta(minutes=2 * n),
            )
        )
        reply = json.dumps({"function": "send_message", "params": {"inner_thoughts": "", "message": f"answer {n}"}})
        memory.recall.add(
            agent.id,
            role="assistant",
            kind="assistant_call",
            content=reply,
            search_text=f"answer {n}",
            function_name="send_message",
            created_at=at + timedelta(minutes=2 * n + 1),
        )
    memory.core.set_value(agent.id, "human", "Likes tea", source=AGENT, cause=Cause(message_id=messages[2].id))
    memory.graph.insert_fact(agent.id, "Ann", "lives in", "Lisbon", author="user", message_id=messages[4].id)
    memory.archival.insert(agent.id, "The spare key is under the blue flower pot.")
    store = ConsolidationStore(services.db, services.clock)
    run = store.start(agent.id, messages[0].id, messages[-1].id, "ask")
    store.add_change(run, "core_memory_append", {"label": "human", "content": "Drinks tea"}, "", PENDING, "")
    services.create_agent("Bo")
    return agent.id, messages


def test_a_session_in_the_window_runs_no_read_on_the_gui_thread(
    make_window, roomy_runtime, qtbot, services, long_agent, monkeypatch, tmp_path, settle, send
):
    """Opening, switching agents, paging back, going to a message from search, the knowledge
    graph and the history, a message and its reply, exports and the review of proposals: the GUI
    thread writes what the user did, and every read runs on another thread."""
    agent_id, messages = long_agent
    store = StoreThreads(services.db, monkeypatch)
    window = make_window(roomy_runtime, start=False)
    window.pages.page_size = 10
    transcript = window.chat.transcript
    store.recording = True
    with qtbot.waitSignal(window.model_ready, timeout=10_000):  # open
        window.start()
    settle(window)
    assert window.state.agent_id == agent_id and "answer 29" in transcript.toPlainText()

    other = window.agents.list.findItems("Bo", Qt.MatchFlag.MatchExactly)[0]  # switch agents, and back
    window.agents.list.setCurrentItem(other)
    settle(window)
    assert window.windowTitle() == "MemDesk — Bo"
    qtbot.waitUntil(lambda: not window.state.busy, timeout=10_000)  # the session has opened it
    window.agents.list.setCurrentItem(window.agents.list.findItems("Companion", Qt.MatchFlag.MatchExactly)[0])
    settle(window)
    assert window.state.agent_id == agent_id

    transcript.anchorClicked.emit(QUrl("earlier:"))  # page back
    settle(window)
    assert "question 20" in transcript.toPlainText()

    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)  # from a search hit
    qtbot.keyClicks(window.chat.search_box, "question 7")
    qtbot.keyClick(window.chat.search_box, Qt.Key.Key_Return)
    results = window.chat.search_results

    def hit():
        found = [results.item(r) for r in range(results.count()) if results.item(r).text().endswith("You: question 7")]
        return found[0] if found else None

    qtbot.waitUntil(lambda: hit() is not None, timeout=10_000)
    results.itemActivated.emit(hit())
    settle(window)
    assert transcript.highlighted_message == messages[7].id

    click_entity(qtbot, window.knowledge, "Ann")  # from a fact's source
    window.knowledge.open_source(0)
    settle(window)
    assert transcript.highlighted_message == messages[4].id

    history = window.history  # from the change's cause
    history.select_change(history.changes[-1].id)
    settle(window)
    history.details.anchorClicked.emit(QUrl(f"message:{messages[2].id}"))
    settle(window)
    assert transcript.highlighted_message == messages[2].id

    roomy_runtime.enqueue(say("Noted."))  # a message and its reply
    send(window, "I moved to Porto")
    settle(window)

    markdown = tmp_path / "conversation.md"  # exports
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(markdown), "Markdown (*.md)"))
    window.transfer_actions.on_export_markdown_triggered()
    settle(window)
    assert "I moved to Porto" in markdown.read_text(encoding="utf-8")
    agent_file = tmp_path / "Companion.af"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(agent_file), "Letta agent file (*.af)"))
    window.transfer_actions.on_export_af_triggered()
    settle(window)
    assert agent_file.exists()

    assert "(1)" in window.consolidation.review_action.text()  # the review of proposals
    window.consolidation.open_review()
    qtbot.waitUntil(lambda: window.consolidation.dialog is not None, timeout=10_000)
    review = window.consolidation.dialog
    assert review.isVisible() and review.list.count() == 1
    with qtbot.waitSignal(review.loaded, timeout=10_000), store.users_write():
        review.reject_button.click()  # the user's decision is written at once; the list is read again
    review.close()
    settle(window)
    assert "(" not in window.consolidation.review_action.text()
    store.recording = False

    assert store.reads_on_the_gui_thread == []
    gui = threading.main_thread().name  # what the user sent and decided is written at once
    assert any(thread == gui and sql.startswith("INSERT INTO messages") for thread, sql, _write in store.statements)
    assert any(sql.startswith("UPDATE consolidation_changes") for sql in store.users_writes_on_the_gui_thread)


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
