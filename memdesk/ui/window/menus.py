"""The File and View menus: every entry with its shortcut and the slot it triggers (the Memory
menu is the memory controllers', Help comes last: help_menu.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence

if TYPE_CHECKING:
    from memdesk.ui.window.main_window import MainWindow


def add_action(window, menu, text: str, shortcut, slot) -> QAction:
    action = QAction(text, window)
    if shortcut is not None:
        action.setShortcut(shortcut)
    action.triggered.connect(slot)
    menu.addAction(action)
    return action


def build_file_and_view_menus(window: MainWindow) -> None:
    menu = window.file_menu = window.menuBar().addMenu("&File")
    window.new_agent_action = add_action(
        window, menu, "&New agent…", QKeySequence.StandardKey.New, window.agent_actions.on_create_requested
    )
    transfers = window.transfer_actions
    add_action(window, menu, "&Import agent (.af or .json)…", QKeySequence("Ctrl+I"), transfers.on_import_triggered)
    add_action(
        window,
        menu,
        "Export agent as &Letta agent file (.af)…",
        QKeySequence("Ctrl+E"),
        transfers.on_export_af_triggered,
    )
    add_action(window, menu, "Export agent as &JSON…", None, transfers.on_export_json_triggered)
    add_action(window, menu, "Export conversation as &Markdown…", None, transfers.on_export_markdown_triggered)
    add_action(window, menu, "Imported &tools of this agent…", None, transfers.on_tools_triggered)
    menu.addSeparator()
    window.settings_action = add_action(
        window, menu, "&Settings…", QKeySequence("Ctrl+,"), window.window_settings.on_settings_triggered
    )
    window.models_action = add_action(
        window, menu, "&Models…", QKeySequence("Ctrl+Shift+L"), window.model_actions.on_models_triggered
    )
    add_action(window, menu, "&Quit", QKeySequence.StandardKey.Quit, window.close)
    view = window.menuBar().addMenu("&View")
    for dock in window.docks.values():
        view.addAction(dock.toggleViewAction())
    window.docks["Memory history"].toggleViewAction().setShortcut(QKeySequence("Ctrl+H"))
