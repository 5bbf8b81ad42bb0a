"""What the window's start does first: the model's process is started before the window is built,
and the window's worker answers with that runtime instead of starting another."""

from __future__ import annotations

import logging

import pytest
from PySide6.QtWidgets import QMessageBox

from memdesk.app import runtimes as app_runtimes
from memdesk.app import services as app_services
from memdesk.app.instance import WINDOW, InstanceLock
from memdesk.app.local_model import StartedModel
from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime
from memdesk.ui.startup import main as window_main
from testing.scripted_window import quit_when_ready


@pytest.fixture
def start(monkeypatch, memdesk_home):
    """``memdesk.ui.startup.main.run`` on scripted runtimes and the hashing embedder; returns the order of
    events ("runtime" each time one is built, "window" when the main window is built)."""
    events: list[str] = []
    built: list[ScriptedRuntime] = []

    def make_runtime(_settings, **_key):
        events.append("runtime")
        built.append(ScriptedRuntime(context_window=32768))
        return built[-1]

    class Window(window_main.MainWindow):
        def __init__(self, *args, **kwargs) -> None:
            events.append("window")
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(app_runtimes, "make_runtime", make_runtime)
    monkeypatch.setattr(window_main, "MainWindow", Window)
    monkeypatch.setattr(
        app_services,
        "open_services",
        lambda paths, key=None, **_options: open_services(paths, key=key, embedder=HashingEmbedder()),
    )
    handlers = list(logging.getLogger().handlers)
    yield events
    for handler in logging.getLogger().handlers[:]:
        if handler not in handlers:
            logging.getLogger().removeHandler(handler)
            handler.close()


def test_the_model_starts_loading_before_the_window_is_built_and_is_the_one_that_answers(qtbot, start):
    assert window_main.run([], on_window=quit_when_ready) == 0
    assert start == ["runtime", "window"]  # one runtime, started first; the worker took it


def test_the_window_answers_with_the_model_memdesk_started_before_importing_it(qtbot, start):
    early = ScriptedRuntime(context_window=32768)
    closed: list[ScriptedRuntime] = []
    early.close = lambda: closed.append(early)
    assert window_main.run([], model_ahead=StartedModel(Settings(), early), on_window=quit_when_ready) == 0
    assert start == ["window"]  # the window started no runtime of its own
    assert closed == [early]  # its worker closed it when the window closed


def test_a_start_that_ends_before_any_window_closes_the_model_started_for_it(start, monkeypatch):
    early = ScriptedRuntime()
    closed: list[ScriptedRuntime] = []
    early.close = lambda: closed.append(early)
    monkeypatch.setattr(
        QMessageBox, "information", lambda *a, **k: QMessageBox.StandardButton.Ok
    )  # "already running": OK
    with InstanceLock(Paths.from_environment().ensure().instance_lock, WINDOW):
        assert window_main.run([], model_ahead=StartedModel(Settings(), early)) == 1  # another window holds the folder
    assert closed == [early] and start == []
