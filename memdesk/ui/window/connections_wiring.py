"""Other AI apps while the window runs (issue 30): what the window serves them (an encrypted store's
passphrase on the private handover socket; MCP over loopback HTTP while ``mcp_http`` is on,
following the settings as they change), and the panels that account for them: writes waiting
for approval (the dock's title counts them, the status bar says when new ones arrive) and the
access log (read again only while it is shown)."""

from __future__ import annotations

from PySide6.QtCore import QObject, Slot
from PySide6.QtWidgets import QDockWidget, QStatusBar

from memdesk.app.services import Services
from memdesk.core.base.errors import MemDeskError
from memdesk.core.base.settings_table import Settings
from memdesk.mcp.serving import Serving
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.panels.access_log import AccessLogPanel
from memdesk.ui.panels.approvals import ApprovalsPanel
from memdesk.ui.window.panel_wiring import PanelWiring


class ConnectionsWiring(QObject):
    def __init__(
        self,
        services: Services,
        approvals: ApprovalsPanel,
        access_log: AccessLogPanel,
        docks: dict[str, QDockWidget],
        wiring: PanelWiring,
        hub: ErrorHub,
        status: QStatusBar,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.hub, self.status = hub, status
        self.approvals_dock = docks["Approvals"]
        self.waiting = 0
        self.serving = Serving(services.paths, services.key)
        approvals.failed.connect(hub.report)
        access_log.failed.connect(hub.report)
        approvals.pending.connect(self.on_pending)
        approvals.memory_changed.connect(wiring.on_proposals_applied)
        approvals.archival_changed.connect(wiring.panels.archival.refresh)
        docks["Access log"].visibilityChanged.connect(access_log.set_polling)
        approvals.refresh()

    def follow(self, settings: Settings) -> None:
        """Serve other apps as ``settings`` say (a taken port is said on the message bar)."""
        try:
            self.serving.follow(settings)
        except MemDeskError as error:
            self.hub.report(error)

    @property
    def url(self) -> str | None:
        return self.serving.url

    @Slot(int)
    @reports_errors
    def on_pending(self, count: int) -> None:
        self.approvals_dock.setWindowTitle(f"Approvals ({count})" if count else "Approvals")
        if count > self.waiting:
            self.status.showMessage(f"{count} write(s) from other apps wait for your approval (Approvals)", 10_000)
        self.waiting = count

    def close(self) -> None:
        self.serving.close()
