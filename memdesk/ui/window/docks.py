"""The panels around the conversation, each in a dock: one row each (title, widget, side); and the
layout they are in, the user's own (kept in the store) or the default for this screen."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget

from memdesk.ui.panels.agents import AgentsPanel
from memdesk.ui.panels.archival import ArchivalPanel
from memdesk.ui.panels.budget import BudgetPanel
from memdesk.ui.panels.documents import DocumentsPanel
from memdesk.ui.panels.history import HistoryView
from memdesk.ui.panels.knowledge import KnowledgePanel
from memdesk.ui.panels.memory import CoreMemoryPanel
from memdesk.ui.window import layout as qt_layout

if TYPE_CHECKING:
    from memdesk.ui.window.main_window import MainWindow


def build_docks(window: MainWindow) -> None:
    services = window.services
    memory = services.memory
    window.agents = AgentsPanel()
    window.budget = BudgetPanel()
    window.memory = CoreMemoryPanel(memory.core, clock=services.clock)
    window.archival = ArchivalPanel(memory.archival, window.jobs)
    window.documents = DocumentsPanel(services)
    window.history = HistoryView(memory.core, memory.archival, memory.recall, services.clock, graph=memory.graph)
    # One reverter: an undo in the Knowledge panel is a recorded change the History view shows.
    window.knowledge = KnowledgePanel(memory.graph, reverter=window.history.reverter)
    left, right = Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea
    window.docks = {}
    for title, widget, area in (
        ("Agents", window.agents, left),
        ("Context budget", window.budget, right),
        ("Core memory", window.memory, right),
        ("Archival memory", window.archival, right),
        ("Documents", window.documents, right),
        ("Knowledge", window.knowledge, right),
        ("Memory history", window.history, right),
    ):
        dock = QDockWidget(title, window)
        dock.setObjectName(title)
        dock.setWidget(qt_layout.fitted(widget))
        window.addDockWidget(area, dock)
        window.docks[title] = dock
    qt_layout.arrange(window, window.docks)


def restore_layout(window: MainWindow) -> None:
    """The layout the user left, else the default for this screen."""
    if not qt_layout.restore(window, window.services.settings.window_layout):
        qt_layout.apply_default(window, window.docks, window.screen().availableGeometry().size())


def save_layout(window: MainWindow) -> None:
    window.services.settings_store.set("window_layout", qt_layout.save(window))
