"""``memdesk``'s window run ends when its window closes, however early: CI waited out its whole
budget on a run whose window closed while its start was still under way (before the event loop
began, so the loop waited for a close that had already happened)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from desktop.app import open_services
from desktop.core.embedding.hashing import HashingEmbedder
from desktop.paths import Paths
from desktop.ui import main as window_main
from desktop.ui.qt_main_window import MainWindow


@pytest.fixture
def plain_store(memdesk_home):
    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    services.create_agent("sam")
    services.settings_store.set("login_after_minutes", 0)
    services.settings_store.set("graph_model_facts", False)
    services.close()


@pytest.fixture
def rescue():
    """Ends a run that would otherwise wait forever, and says so: a regression fails this test
    instead of hanging the suite."""
    stuck: list[bool] = []

    def end_the_loop() -> None:
        stuck.append(True)
        QApplication.exit(1)

    timer = QTimer()
    timer.setSingleShot(True)
    timer.timeout.connect(end_the_loop)
    timer.start(20_000)
    yield stuck
    timer.stop()


def test_a_window_closed_before_the_run_waits_for_it_ends_the_run_and_is_offered_nothing(qtbot, plain_store, window_start, monkeypatch, rescue):
    offered: list[MainWindow] = []

    def close_the_window(_services, _actions, parent):  # the window closes while the start is still under way
        offered.append(parent)
        parent.close()

    monkeypatch.setattr(window_main, "offer_welcome", close_the_window)
    code = window_main.run([])
    assert rescue == [] and code == 0 and len(offered) == 1
