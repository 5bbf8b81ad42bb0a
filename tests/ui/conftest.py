"""Fixtures for the window tests: a MainWindow on the real store with a scripted runtime, and a
guard that fails any test leaving a top-level window open.

Wait for the window's own signals (emitted in the GUI thread), never for the worker's: pytest-qt
connects its blocker directly, so a worker-thread signal that fires between its "already
triggered?" check and its event loop quits nothing, stops the timeout timer, and hangs the test."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from desktop.app import open_services
from desktop.core.embedding.hashing import HashingEmbedder
from desktop.core.runtime.scripted import ScriptedRuntime
from desktop.paths import Paths
from desktop.ui.qt_main_window import MainWindow


@pytest.fixture(autouse=True)
def no_leaked_windows(qapp):
    before = {id(w) for w in QApplication.topLevelWidgets() if w.isVisible()}
    yield
    QApplication.processEvents()
    leaked = [w for w in QApplication.topLevelWidgets() if w.isVisible() and id(w) not in before]
    for widget in leaked:
        widget.close()
    assert not leaked, f"test left windows open: {[type(w).__name__ + ' ' + w.windowTitle() for w in leaked]}"


@pytest.fixture
def roomy_runtime() -> ScriptedRuntime:
    # Room enough that the memory-pressure alert does not add steps the script does not answer.
    return ScriptedRuntime(context_window=32768)


@pytest.fixture
def make_window(qtbot, services):
    """Open the window on ``runtime``; it is shut down (threads joined) after the test."""
    windows: list[MainWindow] = []
    embedder = HashingEmbedder()

    def build(runtime, *, start: bool = True, login: bool = False) -> MainWindow:
        # Tests script every model answer: the login turn of a fresh agent runs only when asked for.
        services.settings_store.set("login_after_minutes", 60 if login else 0)
        # The scripted model answers only what a test queued: the knowledge graph must not take
        # those answers for its facts (tests/ui/test_knowledge.py turns this on where it wants it).
        if services.settings_store.load().graph_model_facts and not getattr(runtime, "graph_may_use", False):
            services.settings_store.set("graph_model_facts", False)
        window = MainWindow(
            services,
            open_worker_services=lambda: open_services(Paths.from_environment(), embedder=embedder),
            make_runtime=lambda _settings: runtime,
            warm_embedder=False,
        )
        windows.append(window)
        window.show()
        if start:
            with qtbot.waitSignal(window.model_ready, timeout=10_000):
                window.start()
            qtbot.waitUntil(lambda: window.chat.send_button.isEnabled(), timeout=10_000)
        return window

    yield build
    for window in windows:
        window.close()
        window.deleteLater()
    QApplication.processEvents()


@pytest.fixture
def send(qtbot):
    """Type ``text`` and press Enter, as a user would, and wait for the reply to finish."""

    def type_and_send(window: MainWindow, text: str, timeout: int = 15_000) -> None:
        window.chat.compose.setFocus()
        qtbot.keyClicks(window.chat.compose, text)
        with qtbot.waitSignal(window.turn_done, timeout=timeout):
            qtbot.keyClick(window.chat.compose, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: not window.busy, timeout=timeout)

    return type_and_send
