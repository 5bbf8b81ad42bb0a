"""``memdesk``'s window run ends when its window closes, however early: CI waited out its whole
budget on a run whose window closed while its start was still under way (before the event loop
began, so the loop waited for a close that had already happened)."""

from __future__ import annotations

from memdesk.ui.startup import main as window_main
from memdesk.ui.window.main_window import MainWindow


def test_a_window_closed_before_the_run_waits_for_it_ends_the_run_and_is_offered_nothing(
    qtbot, plain_store, window_start, monkeypatch, rescue
):
    offered: list[MainWindow] = []

    def close_the_window(_services, _actions, parent):  # the window closes while the start is still under way
        offered.append(parent)
        parent.close()

    monkeypatch.setattr(window_main, "offer_welcome", close_the_window)
    code = window_main.run([])
    assert rescue == [] and code == 0 and len(offered) == 1
