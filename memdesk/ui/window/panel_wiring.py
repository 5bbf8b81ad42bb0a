"""Which panel shows what the others change: the agent shown reaches every panel of its memory; the
agent's and the user's memory edits reach the history, the budget and the block editors; ingestion
reaches Documents, archival memory and the knowledge graph; the graph's extraction reaches the
Knowledge panel. Every failure goes to the window's one error path (the hub)."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal, Slot

from memdesk.ui.common.errors import ErrorHub, MessageBar, reports_errors
from memdesk.ui.common.window_state import WindowState
from memdesk.ui.window.docks import Panels
from memdesk.ui.window.private_chat import refuse_saving
from memdesk.ui.workers.ingest import IngestWorker
from memdesk.ui.workers.jobs import Jobs
from memdesk.ui.workers.reads import Reads
from memdesk.ui.workers.session import SessionWorker


class PanelWiring(QObject):
    """Signals:
    ingest_requested(int, list): to the ingestion thread: read these paths for this agent
    """

    ingest_requested = Signal(int, list)

    def __init__(
        self,
        panels: Panels,
        state: WindowState,
        worker: SessionWorker,
        ingester: IngestWorker,
        jobs: Jobs,
        reads: Reads,
        hub: ErrorHub,
        message_bar: MessageBar,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.panels, self.state, self.worker, self.ingester = panels, state, worker, ingester
        for panel in panels.of_the_agent:
            state.events.agent_id.connect(panel.set_agent)
        self._worker_to_panels()
        self._panels_to_panels()
        self._ingestion()
        self._graph()
        p = panels
        for source in (worker, ingester, worker.graph, p.knowledge, p.memory, p.history, p.archival, jobs, reads):
            source.failed.connect(hub.report)
        hub.shown.connect(message_bar.show_message)

    def _worker_to_panels(self) -> None:
        worker, panels = self.worker, self.panels
        worker.budget_changed.connect(panels.budget.set_budget)
        worker.memory_changed.connect(panels.memory.on_agent_changed_blocks)
        worker.memory_changed.connect(self.on_agent_memory_changed)
        worker.search_hits.connect(panels.archival.show_hits)
        worker.turn_finished.connect(self.on_turn_finished)

    def _panels_to_panels(self) -> None:
        panels, refresh_budget = self.panels, self.worker.refresh_budget
        for changed in (
            panels.knowledge.changed,
            panels.memory.changed,
            panels.archival.changed,
            panels.documents.changed,
        ):
            changed.connect(refresh_budget)
        for changed in (panels.knowledge.changed, panels.memory.changed, panels.archival.changed):
            changed.connect(panels.history.refresh)
        panels.history.graph_changed.connect(panels.knowledge.refresh)
        panels.history.changed.connect(self.on_memory_reverted)
        panels.documents.changed.connect(panels.archival.refresh)

    def _ingestion(self) -> None:
        documents, ingester = self.panels.documents, self.ingester
        self.ingest_requested.connect(ingester.ingest)  # queued: the ingester lives in its own thread
        documents.ingest_requested.connect(self.on_ingest_requested)
        documents.remove_requested.connect(ingester.remove)
        documents.reingest_requested.connect(ingester.reingest)
        documents.pick_requested.connect(ingester.reingest_picked)
        ingester.progress.connect(documents.on_progress)
        ingester.finished.connect(documents.on_finished)
        ingester.finished.connect(self.on_ingested)
        ingester.removed.connect(documents.on_removed)

    def _graph(self) -> None:
        grapher = self.worker.graph
        grapher.changed.connect(self.on_graph_changed)
        grapher.pending.connect(self.panels.knowledge.set_pending)
        self.panels.knowledge.rebuild_requested.connect(grapher.rebuild)

    @Slot(object)
    @reports_errors
    def on_turn_finished(self, _result: object) -> None:
        self.panels.archival.refresh()
        self.panels.history.refresh()

    @Slot(list)
    @reports_errors
    def on_agent_memory_changed(self, _labels: list[str]) -> None:
        self.panels.history.refresh()

    @Slot(list)
    @reports_errors
    def on_memory_reverted(self, labels: list[str]) -> None:
        """Memory changed outside the panels that show it (a revert, a renamed persona)."""
        self.panels.memory.reload(labels or None)
        self.panels.archival.refresh()
        self.worker.refresh_budget()

    @Slot(int)
    @reports_errors
    def on_persona_updated(self, agent_id: int) -> None:
        if agent_id == self.state.agent_id:
            self.on_memory_reverted(["persona"])

    @Slot(list)
    @reports_errors
    def on_proposals_applied(self, labels: list[str]) -> None:
        """Proposals the user accepted (consolidation's, or what was learned from imported
        conversations) changed these blocks: the change is in Memory history too."""
        self.panels.memory.on_agent_changed_blocks(labels)
        self.panels.history.refresh()
        self.worker.refresh_budget()

    @Slot(int)
    @reports_errors
    def on_forgotten(self, _agent_id: int) -> None:
        """What the panels show of memory was read before the removal."""
        panels = self.panels
        panels.memory.reload()
        panels.archival.refresh()
        panels.knowledge.refresh()
        panels.history.refresh()
        self.worker.refresh_budget()

    @Slot(int, list)
    @reports_errors
    def on_ingest_requested(self, agent_id: int, paths: list[str]) -> None:
        refuse_saving(self.state, "Documents cannot be added")
        self.ingest_requested.emit(agent_id, paths)

    @Slot(object)
    @reports_errors
    def on_ingested(self, _report: object) -> None:
        if self.state.agent_id is not None:
            self.worker.graph.extract(self.state.agent_id)  # the new passages' entities

    @Slot(int)
    @reports_errors
    def on_graph_changed(self, agent_id: int) -> None:
        if agent_id == self.state.agent_id:
            self.panels.knowledge.refresh()
            self.panels.history.refresh()  # the extractor's changes are in the memory history too
            if not self.state.busy:
                self.worker.refresh_budget()  # the prompt's top entities may have changed
