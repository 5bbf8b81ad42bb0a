"""Which app read or wrote what, and when: the MCP access log (counts and references, never
memory's text), newest first, for every app or one. Read again every few seconds while shown,
through the panels' reads (apps reach memory from their own processes).

Signals:
    failed(object): an error for the message bar
"""

from __future__ import annotations

from PySide6.QtCore import QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.connections.access_log import Access
from memdesk.core.connections.gate import Connections
from memdesk.ui.common import tables
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.workers.reads import Reads

COLUMNS = ["When", "App", "Agent", "Access", "What", "Details"]
EVERY_APP = "Every app"
POLL_MS = 5000
ROWS = 200


class AccessLogPanel(QWidget):
    failed = Signal(object)

    def __init__(self, connections: Connections, reads: Reads, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.connections, self.reads = connections, reads
        self.entries: list[Access] = []
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        row.addWidget(QLabel("Show"))
        self.app_filter = QComboBox()
        self.app_filter.addItem(EVERY_APP)
        self.app_filter.currentTextChanged.connect(lambda _text: self.refresh())
        row.addWidget(self.app_filter, 1)
        layout.addLayout(row)
        self.empty = QLabel("No app has used memory over MCP yet. Connect one in File > Settings > Connections.")
        self.empty.setWordWrap(True)
        layout.addWidget(self.empty)
        self.table = tables.table(COLUMNS, stretch=len(COLUMNS) - 1, fit=False)
        layout.addWidget(self.table, 1)
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.refresh)

    @Slot()
    @reports_errors
    def refresh(self) -> None:
        app = self.app_filter.currentText()
        wanted = None if app == EVERY_APP else app
        connections = self.connections

        def read() -> tuple[list[Access], list[str]]:
            return connections.log.recent(limit=ROWS, app=wanted), [a.name for a in connections.apps.all()]

        self.reads.load(("access-log",), read, self.show_entries, self.failed.emit)

    def show_entries(self, found: tuple[list[Access], list[str]]) -> None:
        entries, apps = found
        self._offer(apps)
        self.entries = entries
        tables.set_rows(
            self.table,
            [(f"{e.at:%Y-%m-%d %H:%M:%S}", e.app, e.agent or "", e.access, e.operation, e.summary) for e in entries],
        )
        self.empty.setVisible(not entries)

    def _offer(self, apps: list[str]) -> None:
        shown = [self.app_filter.itemText(i) for i in range(1, self.app_filter.count())]
        if shown == apps:
            return
        current = self.app_filter.currentText()
        self.app_filter.blockSignals(True)
        self.app_filter.clear()
        self.app_filter.addItems([EVERY_APP, *apps])
        self.app_filter.setCurrentText(current if current in apps else EVERY_APP)
        self.app_filter.blockSignals(False)

    def set_polling(self, on: bool) -> None:
        """Read again every few seconds only while someone can see the log."""
        if on:
            self.timer.start()
            self.refresh()
        else:
            self.timer.stop()
