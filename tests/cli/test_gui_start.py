"""`memdesk` with no command opens the window: it starts the local model first (memdesk.app.local_model),
then shows the first window with Send working (memdesk/ui/first_window.py), then imports the
main window's modules and hands it the model's runtime and the first window."""

from __future__ import annotations

from memdesk.app import local_model
from memdesk.cli.main import main
from memdesk.ui.startup import first_window
from memdesk.ui.startup import main as window_main


def test_memdesk_starts_the_model_then_the_first_window_and_hands_both_to_the_main_window(qtbot, monkeypatch):
    order: list[str] = []
    started = object()
    shown = []

    def start_with(settings):
        assert settings is not None  # read once, before anything starts
        order.append("model")
        return started

    def open_first_window(paths, settings, milestone):
        order.append("first window")
        shown.append(real_open_first_window(paths, settings, milestone))
        return shown[0]

    def run(argv, *, model_ahead=None, first=None, on_window=None):
        order.append("main window")
        assert argv == [] and model_ahead is started and on_window is None
        assert first is shown[0] and first.isVisible() and first.send_button.isEnabled()
        first.discard()
        first.lock.release()
        return 0

    real_open_first_window = first_window.open_first_window
    monkeypatch.setattr(local_model, "start_with", start_with)
    monkeypatch.setattr(first_window, "open_first_window", open_first_window)
    monkeypatch.setattr(window_main, "run", run)
    assert main([]) == 0
    assert order == ["model", "first window", "main window"]
