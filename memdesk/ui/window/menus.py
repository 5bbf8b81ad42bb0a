"""The window's menus, every entry with its shortcut and the slot it triggers, in one place: the
controllers make their own actions (the private chat's, Backups, Forget, the Help entries) and
this module places them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMenu, QMenuBar

from memdesk.ui.window.agent_actions import AgentActions
from memdesk.ui.window.history_imports import HistoryImports
from memdesk.ui.window.model_actions import ModelActions
from memdesk.ui.window.settings_actions import WindowSettings
from memdesk.ui.window.transfer_actions import TransferActions


def add_action(
    parent: QObject,
    menu: QMenu,
    text: str,
    shortcut: QKeySequence | QKeySequence.StandardKey | None,
    slot: Callable[[], object],
) -> QAction:
    action = QAction(text, parent)
    if shortcut is not None:
        action.setShortcut(shortcut)
    action.triggered.connect(slot)
    menu.addAction(action)
    return action


@dataclass(frozen=True)
class Menus:
    file: QMenu
    view: QMenu
    memory: QMenu
    help: QMenu
    new_agent: QAction
    settings: QAction
    models: QAction


@dataclass(frozen=True)
class Entries:
    """What the menus offer, from the controllers that do it."""

    agents: AgentActions
    transfers: TransferActions
    settings: WindowSettings
    models: ModelActions
    quit: Callable[[], object]
    history: HistoryImports  # other assistants' conversations, and what was learned from them
    before_settings: Iterable[QAction]  # the private chat, Backups
    memory: Iterable[QAction]  # review consolidation's proposals, Forget
    help: Iterable[QAction]


def build_menus(bar: QMenuBar, parent: QObject, entries: Entries, docks: dict[str, QDockWidget]) -> Menus:
    file = bar.addMenu("&File")
    new_agent = add_action(
        parent, file, "&New agent…", QKeySequence.StandardKey.New, entries.agents.on_create_requested
    )
    transfers = entries.transfers
    add_action(parent, file, "&Import agent (.af or .json)…", QKeySequence("Ctrl+I"), transfers.on_import_triggered)
    file.addAction(entries.history.import_action)
    add_action(parent, file, "E&xport…", QKeySequence("Ctrl+Shift+E"), transfers.on_export_triggered)
    add_action(
        parent,
        file,
        "Export agent as &Letta agent file (.af)…",
        QKeySequence("Ctrl+E"),
        transfers.on_export_af_triggered,
    )
    add_action(parent, file, "Export agent as &JSON…", None, transfers.on_export_json_triggered)
    add_action(parent, file, "Export conversation as &Markdown…", None, transfers.on_export_markdown_triggered)
    add_action(parent, file, "Imported &tools of this agent…", None, transfers.on_tools_triggered)
    file.addSeparator()
    file.addActions(list(entries.before_settings))
    settings = add_action(parent, file, "&Settings…", QKeySequence("Ctrl+,"), entries.settings.on_settings_triggered)
    models = add_action(parent, file, "&Models…", QKeySequence("Ctrl+Shift+L"), entries.models.on_models_triggered)
    add_action(parent, file, "&Quit", QKeySequence.StandardKey.Quit, entries.quit)
    view = bar.addMenu("&View")
    for dock in docks.values():
        view.addAction(dock.toggleViewAction())
    docks["Memory history"].toggleViewAction().setShortcut(QKeySequence("Ctrl+H"))
    memory = bar.addMenu("&Memory")
    memory.addActions(list(entries.memory))
    memory.addSeparator()
    memory.addActions([entries.history.conversations_action, entries.history.learned_action])
    help_menu = bar.addMenu("&Help")
    help_menu.addActions(list(entries.help))
    return Menus(file, view, memory, help_menu, new_agent, settings, models)
