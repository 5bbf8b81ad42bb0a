"""What the window's start does first: the model's process is started before the window is built,
and the window's worker answers with that runtime instead of starting another."""

from __future__ import annotations

import logging

import pytest

from desktop.app import open_services
from desktop.core.embedding.hashing import HashingEmbedder
from desktop.core.runtime.scripted import ScriptedRuntime
from desktop.ui import main as window_main


@pytest.fixture
def start(monkeypatch, memdesk_home):
    """``desktop.ui.main.run`` on scripted runtimes and the hashing embedder; returns the order of
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

    monkeypatch.setattr(window_main, "make_runtime", make_runtime)
    monkeypatch.setattr(window_main, "MainWindow", Window)
    monkeypatch.setattr(window_main, "open_services", lambda paths, key=None, embedder=None: open_services(paths, key=key, embedder=HashingEmbedder()))
    handlers = list(logging.getLogger().handlers)
    yield events
    for handler in logging.getLogger().handlers[:]:
        if handler not in handlers:
            logging.getLogger().removeHandler(handler)
            handler.close()


def test_the_model_starts_loading_before_the_window_is_built_and_is_the_one_that_answers(qtbot, start):
    assert window_main.run(["--quit-when-ready"]) == 0
    assert start == ["runtime", "window"]  # one runtime, started first; the worker took it
