"""`memdesk` with no command opens the window, and starts the local model before it imports the
window's modules (desktop.local_model), handing that runtime to the window."""

from __future__ import annotations

from desktop import local_model
from desktop.cli.main import main
from desktop.ui import main as window_main


def test_memdesk_starts_the_model_first_and_hands_it_to_the_window(monkeypatch):
    order: list[str] = []
    started = object()

    def start_ahead():
        order.append("model")
        return started

    def run(argv, *, model_ahead=None):
        order.append("window")
        assert argv == [] and model_ahead is started
        return 0

    monkeypatch.setattr(local_model, "start_ahead", start_ahead)
    monkeypatch.setattr(window_main, "run", run)
    assert main([]) == 0
    assert order == ["model", "window"]
