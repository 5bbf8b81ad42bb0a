"""The window's layout: readable on a 1366×768 laptop screen (every section of the context budget,
more than two lines of a core memory block, no sideways scrolling), and the user's own layout
kept across restarts (issue 22)."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize

from memdesk.ui.window import layout as qt_layout


def visible_lines(editor, scroll) -> float:
    """How many text lines of ``editor`` the core memory panel's scroll area shows."""
    viewport = scroll.viewport()
    top_left = editor.viewport().mapTo(viewport, QPoint(0, 0))
    shown = QRect(top_left, editor.viewport().size()).intersected(viewport.rect())
    return shown.height() / editor.fontMetrics().lineSpacing()


def test_the_default_layout_is_readable_on_a_1366_by_768_screen(make_window, roomy_runtime, qtbot):
    window = make_window(roomy_runtime)
    qt_layout.apply_default(window, window.docks, QSize(1366, 768))
    qtbot.waitUntil(lambda: window.budget.table.rowCount() >= 6, timeout=10_000)
    qtbot.wait(50)  # the layout settles
    assert window.width() <= 1366 and window.height() <= 768
    table = window.budget.table
    for row in range(table.rowCount()):  # every section, without scrolling the table
        assert table.visualRect(table.model().index(row, 0)).bottom() <= table.viewport().height(), table.item(
            row, 0
        ).text()
    assert window.docks["Core memory"].isVisible()
    persona = window.memory.editors["persona"].editor
    assert visible_lines(persona, window.memory.scroll_area) > 2
    assert (
        window.memory.scroll_area.widget().width() <= window.memory.scroll_area.viewport().width()
    )  # no sideways scrolling


def test_the_window_reopens_with_the_layout_the_user_left(make_window, roomy_runtime, qtbot, services):
    window = make_window(roomy_runtime)
    window.resize(760, 620)  # within the test screen (restoring keeps a window on its screen)
    # The height tells: the width is at least the window's minimum, wider than the test screen,
    # which restoring a window keeps it within.
    assert window.height() == 620 != qt_layout.default_size(window.screen().availableGeometry().size()).height()
    window.docks["Agents"].hide()
    window.docks["Knowledge"].raise_()
    qtbot.wait(50)
    window.close()
    assert services.settings.window_layout
    again = make_window(roomy_runtime)
    assert again.height() == 620
    assert not again.docks["Agents"].isVisible()
    qtbot.wait(50)
    in_front = lambda title: not again.docks[title].visibleRegion().isEmpty()  # noqa: E731
    assert in_front("Knowledge") and not in_front("Core memory")  # the tab the user left in front


def test_a_damaged_or_older_layout_gives_the_default_one(make_window, roomy_runtime, services):
    for saved in (
        "not json",
        '{"version": 0, "geometry": "", "state": ""}',
        '{"version": 1, "geometry": "%%%", "state": "%%%"}',
    ):
        services.settings_store.set("window_layout", saved)
        window = make_window(roomy_runtime, start=False)
        assert window.docks["Agents"].isVisible() and window.docks["Core memory"].isVisible()
        window.close()


def test_the_default_size_fits_a_small_screen_and_is_capped_on_a_big_one():
    assert qt_layout.default_size(QSize(1366, 768)).height() <= 768 - 40
    assert qt_layout.default_size(QSize(3840, 2160)) == qt_layout.PREFERRED
