"""The Models page's box for models an Ollama or LM Studio server on this computer serves: looked
for only when the user asks (the default ports on 127.0.0.1), and checked for JSON-schema support
before the window switches to one. The looking and the checking are ``memdesk.core.models.servers``
and run on the job pool.

Signals:
    choose_requested(object): a ``Choice`` of a server's model the user wants to switch to
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QGroupBox, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout

from memdesk.core.models.servers import (
    LocalServer,
    SchemaSupport,
    find_local_servers,
    probe_schema_support,
    server_choice,
    with_server_notes,
)
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.common.text import plain_label
from memdesk.ui.workers.jobs import Jobs


class LocalServersBox(QGroupBox):
    choose_requested = Signal(object)

    def __init__(self, jobs: Jobs, hub: ErrorHub) -> None:
        super().__init__("Models on Ollama or LM Studio (this computer only)")
        self.jobs, self.hub = jobs, hub
        self.servers: list[LocalServer] = []
        self._switching = False
        layout = QVBoxLayout(self)
        intro = QLabel("MemDesk never looks for servers by itself. Ask, and it tries the default ports on 127.0.0.1.")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        row = QHBoxLayout()
        self.find_servers_button = QPushButton("&Look for local servers")
        self.find_servers_button.clicked.connect(self.on_find_servers_clicked)
        self.use_server_button = QPushButton("Use &server model")
        self.use_server_button.clicked.connect(self.on_use_server_clicked)
        row.addWidget(self.find_servers_button)
        row.addWidget(self.use_server_button)
        row.addStretch(1)
        layout.addLayout(row)
        self.server_list = QListWidget()
        self.server_list.setMaximumHeight(110)
        self.server_list.itemSelectionChanged.connect(lambda: self.update_buttons(switching=self._switching))
        layout.addWidget(self.server_list)
        self.server_note = plain_label()
        self.server_note.setWordWrap(True)
        layout.addWidget(self.server_note)

    def update_buttons(self, *, switching: bool) -> None:
        """``switching``: a switch of model is under way (the page's, whichever model it is to)."""
        self._switching = switching
        self.use_server_button.setEnabled(self.server_list.currentItem() is not None and not switching)

    @Slot()
    @reports_errors
    def on_find_servers_clicked(self) -> None:
        self.find_servers_button.setEnabled(False)
        self.server_note.setText("Looking on 127.0.0.1…")
        self.jobs.run(find_local_servers, self.show_servers, self._server_failed)

    def show_servers(self, servers: list[LocalServer]) -> None:
        self.servers = servers
        self.find_servers_button.setEnabled(True)
        self.server_list.clear()
        for server in servers:
            for model in server.models:
                item = QListWidgetItem(f"{model} — {server.label}")
                item.setData(Qt.ItemDataRole.UserRole, (server, model))
                self.server_list.addItem(item)
        if not servers:
            self.server_note.setText("No Ollama (port 11434) or LM Studio (port 1234) server answers on this computer.")
        else:
            self.server_note.setText(
                f"Found: {', '.join(f'{s.label} ({len(s.models)} models)' for s in servers)}. "
                "Pick a model and press Use."
            )
        self.update_buttons(switching=self._switching)

    def _server_failed(self, error: BaseException) -> None:
        self.find_servers_button.setEnabled(True)
        self.server_note.setText("")
        self.hub.report(error)

    @Slot()
    @reports_errors
    def on_use_server_clicked(self) -> None:
        item = self.server_list.currentItem()
        if item is None:
            return
        server, model = item.data(Qt.ItemDataRole.UserRole)
        self.server_note.setText(
            f"Asking {server.label} whether {model} follows JSON schemas (it may load the model first)…"
        )
        self.use_server_button.setEnabled(False)

        def probe() -> Any:
            return probe_schema_support(server.base_url, model)

        def probed(support: SchemaSupport) -> None:
            support = with_server_notes(server.kind, support)
            self.server_note.setText(support.note)
            self.choose_requested.emit(server_choice(server.label, server.base_url, model, support))

        self.jobs.run(probe, probed, self._server_failed)
