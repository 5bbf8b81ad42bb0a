"""The knowledge graph's extraction as the window's panels see it: signals for what the session's
graph extraction (memdesk.session.graph_extraction) reports, and slots that ask it for work.

Signals:
    changed(int): the agent's graph changed
    pending(int, int, int): the agent's queued sources (agent, entities stage, facts stage)
    failed(object): an error that stopped extraction as a whole (the store failed)
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal, Slot

from memdesk.session.session import Session
from memdesk.ui.common.errors import reports_errors


class GraphSignals(QObject):
    changed = Signal(int)
    pending = Signal(int, int, int)
    failed = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session: Session | None = None  # set once the session is built (it reports here)

    @Slot(int)
    @reports_errors
    def extract(self, agent_id: int) -> None:
        """Queue what is new for the agent (catching up on what a closed or crashed app left)."""
        if self.session is not None:
            self.session.graph_catch_up(agent_id)

    @Slot(int)
    @reports_errors
    def rebuild(self, agent_id: int) -> None:
        if self.session is not None:
            self.session.graph_rebuild(agent_id)
