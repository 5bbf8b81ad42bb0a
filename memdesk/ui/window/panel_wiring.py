"""Which panel shows what the others change: the agent's and the user's memory edits reach the
history, the budget and the block editors; ingestion reaches Documents, archival memory and the
knowledge graph; the graph's extraction reaches the Knowledge panel. Every failure goes to the
window's one error path (the hub)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

from memdesk.ui.common.errors import reports_errors

if TYPE_CHECKING:
    from memdesk.ui.window.main_window import MainWindow


class PanelWiring(QObject):
    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self._worker_to_panels()
        self._panels_to_panels()
        self._ingestion()
        self._graph()
        report = window.hub.report
        for source in (
            window.worker,
            window.ingester,
            window.grapher,
            window.knowledge,
            window.memory,
            window.history,
            window.archival,
            window.jobs,
        ):
            source.failed.connect(report)
        window.hub.shown.connect(window.message_bar.show_message)

    def _worker_to_panels(self) -> None:
        window, worker = self.window, self.window.worker
        worker.budget_changed.connect(window.budget.set_budget)
        worker.memory_changed.connect(window.memory.on_agent_changed_blocks)
        worker.memory_changed.connect(self.on_agent_memory_changed)
        worker.search_hits.connect(window.archival.show_hits)

    def _panels_to_panels(self) -> None:
        window = self.window
        budget = window.budget_requested
        for changed in (
            window.knowledge.changed,
            window.memory.changed,
            window.archival.changed,
            window.documents.changed,
        ):
            changed.connect(budget)
        for changed in (window.knowledge.changed, window.memory.changed, window.archival.changed):
            changed.connect(window.history.refresh)
        window.history.graph_changed.connect(window.knowledge.refresh)
        window.history.changed.connect(self.on_history_reverted)
        window.documents.changed.connect(window.archival.refresh)

    def _ingestion(self) -> None:
        window, ingester = self.window, self.window.ingester
        window.ingest_requested.connect(ingester.ingest)
        window.documents.ingest_requested.connect(self.on_ingest_requested)
        window.documents.remove_requested.connect(ingester.remove)
        window.documents.reingest_requested.connect(ingester.reingest)
        window.documents.pick_requested.connect(ingester.reingest_picked)
        ingester.progress.connect(window.documents.on_progress)
        ingester.finished.connect(window.documents.on_finished)
        ingester.finished.connect(self.on_ingested)
        ingester.removed.connect(window.documents.on_removed)

    def _graph(self) -> None:
        window, grapher = self.window, self.window.grapher
        window.graph_requested.connect(grapher.extract)
        grapher.changed.connect(self.on_graph_changed)
        grapher.pending.connect(window.knowledge.set_pending)
        window.knowledge.rebuild_requested.connect(grapher.rebuild)

    @Slot(list)
    @reports_errors
    def on_agent_memory_changed(self, _labels: list) -> None:
        self.window.history.refresh()

    @Slot(list)
    @reports_errors
    def on_history_reverted(self, labels: list) -> None:
        window = self.window
        window.memory.reload(labels or None)
        window.archival.refresh()
        window.budget_requested.emit()

    @Slot(int, list)
    @reports_errors
    def on_ingest_requested(self, agent_id: int, paths: list) -> None:
        self.window.private_chat.refuse_saving("Documents cannot be added")
        self.window.ingest_requested.emit(agent_id, paths)

    @Slot(object)
    @reports_errors
    def on_ingested(self, _report) -> None:
        if self.window.agent_id is not None:
            self.window.graph_requested.emit(self.window.agent_id)  # the new passages' entities

    @Slot(int)
    @reports_errors
    def on_graph_changed(self, agent_id: int) -> None:
        window = self.window
        if agent_id == window.agent_id:
            window.knowledge.refresh()
            window.history.refresh()  # the extractor's changes are in the memory history too
            if not window.busy:
                window.budget_requested.emit()  # the prompt's top entities may have changed
