"""Fixtures for the window tests: a MainWindow on the real store with a scripted runtime, and a
guard that fails any test leaving a top-level window open.

Waiting for a signal: ``qtbot.waitSignal`` only for signals emitted in the GUI thread (the window's
own); ``wait_for_signal`` for a worker thread's. pytest-qt connects its blocker as a plain callable,
so a worker's signal calls it in the worker thread: fired just before the blocker's event loop
starts, it quits a loop that is not running yet and stops the timeout timer from a foreign thread,
which disarms it (QTimer forgets its id, the timer event no longer matches) -- the wait never ends.
A guard fails any test whose waitSignal blocker is called from another thread."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QApplication
from pytestqt.wait_signal import SignalBlocker

from memdesk.app import runtimes as app_runtimes
from memdesk.app import services as app_services
from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime
from memdesk.ui.window.main_window import MainWindow
from tests.conftest import PATIENT_RECALL_MS
from tests.models.conftest import fake_hub  # noqa: F401 - a fixture: the Models page's tests download from it


@pytest.fixture(autouse=True)
def no_leaked_windows(qapp):
    before = {id(w) for w in QApplication.topLevelWidgets() if w.isVisible()}
    yield
    QApplication.processEvents()
    leaked = [w for w in QApplication.topLevelWidgets() if w.isVisible() and id(w) not in before]
    for widget in leaked:
        widget.close()
    assert not leaked, f"test left windows open: {[type(w).__name__ + ' ' + w.windowTitle() for w in leaked]}"


@pytest.fixture(autouse=True)
def waits_are_answered_in_the_gui_thread(monkeypatch):
    """A waitSignal blocker called from another thread can hang its test (see above): fail the test
    even on the runs where the race was not hit."""
    foreign: list[str] = []
    quit_loop = SignalBlocker._quit_loop_by_signal

    def checked(self, *args):
        if threading.current_thread() is not threading.main_thread():
            foreign.append(f"{self.signal_name or 'a signal'} emitted in {threading.current_thread().name}")
        return quit_loop(self, *args)

    monkeypatch.setattr(SignalBlocker, "_quit_loop_by_signal", checked)
    yield foreign  # what it saw (its own test reads and clears it)
    assert not foreign, f"qtbot.waitSignal on a signal another thread emits (use wait_for_signal): {foreign}"


class _GuiThreadRelay(QObject):
    """Re-emits a signal in the GUI thread: this object lives there, so a worker's emission reaches
    ``relay`` through the event queue (Qt's automatic queued connection)."""

    fired = Signal(object)  # the source signal's arguments, as a tuple

    def __init__(self, signal) -> None:
        super().__init__()
        self._signal = signal
        signal.connect(self.relay)

    def relay(self, *args) -> None:
        self.fired.emit(args)

    def detach(self) -> None:
        self._signal.disconnect(self.relay)


@pytest.fixture
def wait_for_signal(qtbot):
    """``with wait_for_signal(worker.finished, timeout=...) as blocker:`` waits as qtbot.waitSignal
    does (``blocker.args`` are the signal's arguments) for a signal emitted in any thread."""

    @contextmanager
    def wait(signal, timeout: int = 10_000, raising: bool = True) -> Iterator:
        relay = _GuiThreadRelay(signal)
        try:
            with qtbot.waitSignal(relay.fired, timeout=timeout, raising=raising) as blocker:
                yield blocker
            if blocker.signal_triggered:
                blocker.args = list(blocker.args[0])
        finally:
            relay.detach()
            relay.deleteLater()

    return wait


@pytest.fixture
def roomy_runtime() -> ScriptedRuntime:
    # Room enough that the memory-pressure alert does not add steps the script does not answer.
    return ScriptedRuntime(context_window=32768)


@pytest.fixture
def make_window(qtbot, services):
    """Open the window on ``runtime``; it is shut down (threads joined) after the test."""
    windows: list[MainWindow] = []
    embedder = HashingEmbedder()

    def build(runtime, *, start: bool = True, login: bool = False, make_runtime=None) -> MainWindow:
        """``make_runtime``: the window's runtime factory (a slow one, say); by default ``runtime``."""
        # Tests script every model answer: the login turn of a fresh agent runs only when asked for.
        services.settings_store.set("login_after_minutes", 60 if login else 0)
        # The scripted model answers only what a test queued: the knowledge graph must not take
        # those answers for its facts (tests/ui/test_knowledge.py turns this on where it wants it).
        if services.settings_store.load().graph_model_facts and not getattr(runtime, "graph_may_use", False):
            services.settings_store.set("graph_model_facts", False)
        # Automatic recall's 300 ms deadline is the app's; a loaded machine missed it and the
        # window's turn placed nothing (tests of the deadline set their own).
        if "auto_recall_timeout_ms" not in services.settings_store.stored_names():
            services.settings_store.set("auto_recall_timeout_ms", PATIENT_RECALL_MS)
        window = MainWindow(
            services,
            open_worker_services=lambda: open_services(Paths.from_environment(), embedder=embedder),
            make_runtime=make_runtime or (lambda _settings: runtime),
            warm_embedder=False,
        )
        windows.append(window)
        window.show()
        if start:
            with qtbot.waitSignal(window.model_ready, timeout=10_000):
                window.start()
            qtbot.waitUntil(lambda: window.chat.send_button.isEnabled(), timeout=10_000)
            qtbot.waitUntil(lambda: not window.reads.busy, timeout=10_000)  # the panels show the agent
        return window

    yield build
    for window in windows:
        window.close()
        window.deleteLater()
    QApplication.processEvents()


@pytest.fixture
def send(qtbot):
    """Type ``text`` and press Enter, as a user would: once Send is enabled (a turn or a job that
    keeps the window busy may still be ending), then wait for the reply to finish."""

    def type_and_send(window: MainWindow, text: str, timeout: int = 15_000) -> None:
        qtbot.waitUntil(lambda: window.chat.send_button.isEnabled(), timeout=timeout)
        window.chat.compose.setFocus()
        qtbot.keyClicks(window.chat.compose, text)
        with qtbot.waitSignal(window.turn_done, timeout=timeout):
            qtbot.keyClick(window.chat.compose, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: not window.state.busy and not window.reads.busy, timeout=timeout)

    return type_and_send


@pytest.fixture
def idle_now(qtbot):
    """``idle_now(window, kind)``: the idle time of ``kind`` is up. Once the last turn's job has
    ended (its reply shows before it does, and idle work that finds the job thread busy waits a
    whole idle time more), the idle scheduler runs it."""

    def run(window: MainWindow, kind: str, timeout: int = 10_000) -> None:
        qtbot.waitUntil(window.worker.session.may_run_on_its_own, timeout=timeout)
        window.worker.session.idle.run_now(kind)

    return run


@pytest.fixture
def settle(qtbot):
    """``settle(window)`` (or a panel) waits until what its panels asked to read has been shown and
    its background jobs are done: the panels read the store off the GUI thread."""

    def wait(owner, timeout: int = 10_000) -> None:
        reads, jobs = owner.reads, getattr(owner, "jobs", None)
        qtbot.waitUntil(lambda: not reads.busy and (jobs is None or jobs.pending == 0), timeout=timeout)

    return wait


@pytest.fixture
def window_start(monkeypatch):
    """``memdesk.ui.startup.main.run`` on the scripted runtime and the hashing embedder; the log handler
    it installs is removed afterwards."""
    monkeypatch.setattr(app_runtimes, "make_runtime", lambda _settings, **_key: ScriptedRuntime(context_window=32768))
    monkeypatch.setattr(
        app_services,
        "open_services",
        lambda paths, key=None, **_options: open_services(paths, key=key, embedder=HashingEmbedder()),
    )
    handlers = list(logging.getLogger().handlers)
    yield
    for handler in logging.getLogger().handlers[:]:
        if handler not in handlers:
            logging.getLogger().removeHandler(handler)
            handler.close()


@pytest.fixture
def plain_store(memdesk_home, new_store):
    """An unencrypted store with agent "sam", no login turn and no model facts: a window run on it
    runs only the turns a test causes."""
    paths = Paths.from_environment().ensure()
    new_store(paths.database)
    services = open_services(paths, embedder=HashingEmbedder())
    services.create_agent("sam")
    services.settings_store.set("login_after_minutes", 0)
    services.settings_store.set("graph_model_facts", False)
    services.close()


#: How long ``rescue`` lets a window run go on: a run on the scripted model ends in seconds, and a
#: loaded CI machine must not be taken for a hang.
RESCUE_AFTER_MS = 120_000


@pytest.fixture
def rescue():
    """Ends a window run (``memdesk.ui.startup.main.run``) that would otherwise wait forever, and says so: a
    regression fails the test instead of hanging the suite."""
    stuck: list[bool] = []

    def end_the_loop() -> None:
        stuck.append(True)
        QApplication.exit(1)

    timer = QTimer()
    timer.setSingleShot(True)
    timer.timeout.connect(end_the_loop)
    timer.start(RESCUE_AFTER_MS)
    yield stuck
    timer.stop()
