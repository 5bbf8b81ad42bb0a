"""A second window on the same data folder says which process holds it and asks the running
window to come forward; the running window does."""

from __future__ import annotations

import os

import pytest
from PySide6.QtWidgets import QMessageBox, QWidget

from memdesk.app import services as app_services
from memdesk.app.instance import TERMINAL_CHAT, WINDOW, InstanceLock, ask_to_come_forward
from memdesk.core.base.paths import Paths
from memdesk.ui.startup import main as window_main
from memdesk.ui.startup.instance import ComeForwardWatcher


@pytest.fixture
def shown(monkeypatch):
    """What the message boxes said. A start that gets as far as opening the store fails the test."""
    monkeypatch.setattr(
        app_services, "open_services", lambda *a, **k: pytest.fail("the store was opened beside a running instance")
    )
    messages: list[str] = []
    monkeypatch.setattr(QMessageBox, "information", lambda _parent, _title, text, *a, **k: messages.append(text))
    monkeypatch.setattr(QMessageBox, "critical", lambda _parent, _title, text, *a, **k: messages.append(text))
    return messages


def test_a_second_window_names_the_first_and_asks_it_forward(memdesk_home, shown):
    paths = Paths.from_environment()
    with InstanceLock(paths.instance_lock, WINDOW):
        assert window_main.run([]) == 1
    assert len(shown) == 1 and f"{WINDOW} (process {os.getpid()})" in shown[0]
    assert paths.raise_request.exists()


def test_a_window_started_beside_a_terminal_chat_says_so_and_asks_nothing(memdesk_home, shown):
    paths = Paths.from_environment()
    with InstanceLock(paths.instance_lock, TERMINAL_CHAT):
        assert window_main.run([]) == 1
    assert f"{TERMINAL_CHAT} (process {os.getpid()})" in shown[0]
    assert not paths.raise_request.exists()


def test_the_running_window_comes_forward_when_a_second_start_asks(memdesk_home, qtbot):
    paths = Paths.from_environment().ensure()
    window = QWidget()
    qtbot.addWidget(window)
    window.show()
    window.showMinimized()
    watcher = ComeForwardWatcher(paths, window)
    with qtbot.waitSignal(watcher.requested, timeout=10_000):
        ask_to_come_forward(paths.raise_request)
    assert not paths.raise_request.exists() and not window.isMinimized()
    window.close()
