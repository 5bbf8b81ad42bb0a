"""Conversation search (Ctrl+F): on the job pool, since a search may first embed every message
without a vector yet; only the newest search's answer is shown, and only for the agent it asked about."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Slot

from memdesk.app.services import Services
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.panels.archival import ArchivalPanel
from memdesk.ui.panels.chat import ChatPanel
from memdesk.ui.workers.jobs import Jobs

RESULTS = 20


class ConversationSearch(QObject):
    def __init__(
        self,
        services: Services,
        jobs: Jobs,
        hub: ErrorHub,
        chat: ChatPanel,
        archival: ArchivalPanel,
        agent_id: Callable[[], int | None],
        parent: QObject,
    ) -> None:
        super().__init__(parent)
        self._services, self._jobs, self._hub = services, jobs, hub
        self._chat, self._archival = chat, archival
        self._agent_id = agent_id
        self._serial = 0
        chat.search_requested.connect(self.on_search_requested)

    @Slot(str)
    @reports_errors
    def on_search_requested(self, query: str) -> None:
        agent_id = self._agent_id()
        if agent_id is None:
            return
        self._serial += 1
        serial = self._serial
        self._chat.show_search_pending(query)
        self._jobs.run(
            lambda: self._services.memory.recall.search_text(agent_id, query, page_size=RESULTS),
            lambda page: self._show(serial, agent_id, page),
            self._hub.report,
        )

    def _show(self, serial: int, agent_id: int, page) -> None:
        if serial != self._serial or agent_id != self._agent_id():
            return  # a newer search or another agent: this answer is stale
        self._chat.show_search_results(page)
        self._archival.show_hits([("conversation", m) for m in page.hits])
