"""The panels around the conversation, each in a dock: one row each (title, widget, side); and the
layout they are in, the user's own (kept in the store) or the default for this screen."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow, QWidget

from memdesk.app.services import Services
from memdesk.core.connections.gate import Connections
from memdesk.core.memory.revert import Reverter
from memdesk.ui.panels.access_log import AccessLogPanel
from memdesk.ui.panels.agents import AgentsPanel
from memdesk.ui.panels.approvals import ApprovalsPanel
from memdesk.ui.panels.archival import ArchivalPanel
from memdesk.ui.panels.budget import BudgetPanel
from memdesk.ui.panels.documents import DocumentsPanel
from memdesk.ui.panels.history import HistoryView
from memdesk.ui.panels.knowledge import KnowledgePanel
from memdesk.ui.panels.memory import CoreMemoryPanel
from memdesk.ui.window import layout as qt_layout
from memdesk.ui.workers.jobs import Jobs
from memdesk.ui.workers.reads import Reads


@dataclass(frozen=True)
class Panels:
    """The docked panels of one window."""

    agents: AgentsPanel
    budget: BudgetPanel
    memory: CoreMemoryPanel
    archival: ArchivalPanel
    documents: DocumentsPanel
    knowledge: KnowledgePanel
    history: HistoryView
    approvals: ApprovalsPanel  # writes other apps asked for over MCP, waiting for the user
    access_log: AccessLogPanel  # which app read or wrote what

    @property
    def of_the_agent(self) -> tuple[CoreMemoryPanel, HistoryView, ArchivalPanel, DocumentsPanel, KnowledgePanel]:
        """The panels showing one agent's memory (each has ``set_agent``)."""
        return (self.memory, self.history, self.archival, self.documents, self.knowledge)


def build_panels(services: Services, jobs: Jobs, reads: Reads) -> Panels:
    """The panels over ``services``' stores; each reads what it shows through ``reads``."""
    memory = services.memory
    graph = memory.graph
    if graph is None:  # the composition root always builds it; a bare MemoryServices may not
        raise ValueError("the window's panels need the store's knowledge graph")
    # One reverter: an undo in the Knowledge panel is a recorded change the History view shows.
    reverter = Reverter(memory.core.history, memory.core, memory.archival, graph)
    history = HistoryView(memory.core, memory.recall, reverter, services.clock, reads)
    settings_store = services.settings_store
    connections = Connections(memory, services.clock, keep_days=lambda: settings_store.load().mcp_log_days)
    return Panels(
        agents=AgentsPanel(),
        budget=BudgetPanel(),
        memory=CoreMemoryPanel(memory.core, reads, clock=services.clock),
        archival=ArchivalPanel(memory.archival, jobs, reads),
        documents=DocumentsPanel(services.db, reads),
        knowledge=KnowledgePanel(graph, reads, reverter=reverter),
        history=history,
        approvals=ApprovalsPanel(connections, reads, jobs),
        access_log=AccessLogPanel(connections, reads),
    )


def build_docks(window: QMainWindow, panels: Panels) -> dict[str, QDockWidget]:
    left, right = Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea
    rows: tuple[tuple[str, QWidget, Qt.DockWidgetArea], ...] = (
        ("Agents", panels.agents, left),
        ("Context budget", panels.budget, right),
        ("Core memory", panels.memory, right),
        ("Archival memory", panels.archival, right),
        ("Documents", panels.documents, right),
        ("Knowledge", panels.knowledge, right),
        ("Memory history", panels.history, right),
        ("Approvals", panels.approvals, right),
        ("Access log", panels.access_log, right),
    )
    docks = {}
    for title, widget, area in rows:
        dock = QDockWidget(title, window)
        dock.setObjectName(title)
        dock.setWidget(qt_layout.fitted(widget))
        window.addDockWidget(area, dock)
        docks[title] = dock
    qt_layout.arrange(window, docks)
    return docks


def restore_layout(window: QMainWindow, docks: dict[str, QDockWidget], saved: str) -> None:
    """The layout the user left (``saved``, the ``window_layout`` setting), else the default for this screen."""
    if not qt_layout.restore(window, saved):
        qt_layout.apply_default(window, docks, window.screen().availableGeometry().size())
