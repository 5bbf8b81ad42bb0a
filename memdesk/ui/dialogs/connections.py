"""File > Settings > Connections: other AI apps and MemDesk's memory (issue 30).

Connecting one is one step: pick the app, and its configuration is shown (Claude Desktop, Cursor,
VS Code, LM Studio with its ``lmstudio://add_mcp`` link, Jan, AnythingLLM; Open WebUI's URL and a
token), to copy, or to add to the app's configuration file found on this computer after the
change is shown. Below, the connected apps: the agents each may reach (read-only unless writes
were allowed; each write waits in Approvals unless the app is trusted), a new HTTP token (shown
once), and Disconnect. Loopback HTTP itself is the ``mcp_http`` setting on the General tab.

The page reads and changes the apps through ``run`` (the window's jobs): never on the GUI thread.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.connections.gate import Connections
from memdesk.mcp.client_configs import (
    CLIENTS,
    ConfigChange,
    apply_change,
    client,
    config_file,
    http_url,
    lmstudio_deeplink,
    plan_change,
    snippet,
)
from memdesk.ui.common import tables
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import literal, set_plain

#: ``run(work, on_done)``: ``work`` off the GUI thread, ``on_done(result)`` back in it.
Run = Callable[[Callable[[], Any], Callable[[Any], None]], Any]
APP_COLUMNS = ["App", "May reach", "Writes", "Last seen"]


class ConnectionsPage(QWidget):
    failed = Signal(object)

    def __init__(self, connections: Connections, run: Run, port: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.connections, self.run, self.port = connections, run, port
        self.apps: list[dict[str, Any]] = []
        self.agents: list[str] = []
        #: Which read of the apps is the newest: jobs run side by side, and an older read that ends
        #: last must not show the list as it was before a change.
        self.reading = 0
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("<b>Connect an AI app</b>"))
        pick = QHBoxLayout()
        self.client = QComboBox()
        for key, target in CLIENTS.items():
            self.client.addItem(target.name, key)
        self.client.currentIndexChanged.connect(self.on_client_changed)
        pick.addWidget(self.client, 1)
        self.copy_button = QPushButton("Copy")
        self.copy_button.clicked.connect(self.on_copy_clicked)
        pick.addWidget(self.copy_button)
        self.write_button = QPushButton("Add to its configuration…")
        self.write_button.clicked.connect(self.on_write_clicked)
        pick.addWidget(self.write_button)
        layout.addLayout(pick)
        self.how = QLabel()
        self.how.setWordWrap(True)
        layout.addWidget(self.how)
        self.config = QPlainTextEdit()
        self.config.setReadOnly(True)
        layout.addWidget(self.config, 1)
        layout.addWidget(QLabel("<b>Connected apps</b>"))
        self.table = tables.table(APP_COLUMNS, stretch=1, single=True, fit=False)
        layout.addWidget(self.table, 1)
        row = QHBoxLayout()
        self.agent = QComboBox()
        self.may_write = QCheckBox("may write (asks you)")
        self.trusted = QCheckBox("trusted (writes without asking)")
        self.grant_button = QPushButton("Give this agent")
        self.grant_button.clicked.connect(self.on_grant_clicked)
        self.token_button = QPushButton("New HTTP token…")
        self.token_button.clicked.connect(self.on_token_clicked)
        self.revoke_button = QPushButton("Disconnect")
        self.revoke_button.clicked.connect(self.on_revoke_clicked)
        for widget in (
            self.agent,
            self.may_write,
            self.trusted,
            self.grant_button,
            self.token_button,
            self.revoke_button,
        ):
            row.addWidget(widget)
        layout.addLayout(row)
        self.on_client_changed()
        self.refresh()

    # --- connecting an app -----------------------------------------------------------------
    def target(self):
        return client(str(self.client.currentData()))

    @Slot()
    @reports_errors
    def on_client_changed(self) -> None:
        target = self.target()
        shown = json.dumps(snippet(target, port=self.port), indent=2)
        if target.key == "lmstudio":
            shown += f"\n\nOr open this link in LM Studio:\n{lmstudio_deeplink()}"
        if not target.servers_key:
            shown = (
                f"URL: {http_url(self.port)}\nAuthentication: Bearer, with a token from New HTTP token… below\n"
                "(turn on mcp_http on the General tab: MemDesk serves it while it runs)"
            )
        self.config.setPlainText(shown)
        set_plain(self.how, f"In {target.name}: {target.how}")
        self.write_button.setEnabled(bool(target.servers_key))

    @Slot()
    @reports_errors
    def on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.config.toPlainText())

    @Slot()
    @reports_errors
    def on_write_clicked(self) -> None:
        target = self.target()
        path = config_file(target)
        if path is None:
            QMessageBox.information(
                self,
                "Not found",
                literal(f"{target.name}'s configuration file was not found here: copy the text instead."),
            )
            return
        self.confirm_change(plan_change(target, path))

    def confirm_change(self, change: ConfigChange) -> bool:
        """Show the change; write it (keeping the old file) only if the user says so."""
        target = self.target()
        if not change.changes_anything:
            QMessageBox.information(
                self, "Already connected", literal(f"{change.path} already connects {target.name}.")
            )
            return False
        box = QMessageBox(self)
        box.setWindowTitle("Change the configuration?")
        box.setText(literal(f"Add MemDesk to {change.path}? Every other entry stays; the old file is kept beside it."))
        box.setDetailedText(change.diff)
        box.setStandardButtons(QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        if box.exec() != QMessageBox.StandardButton.Save:
            return False
        apply_change(change)
        self.connect_app(target.name)
        return True

    def connect_app(self, name: str) -> None:
        self.run(
            lambda: self.connections.apps.find(name) or self.connections.apps.register(name), lambda _a: self.refresh()
        )

    # --- the connected apps ----------------------------------------------------------------
    @Slot()
    @reports_errors
    def refresh(self) -> None:
        connections = self.connections

        def read() -> tuple[list[dict[str, Any]], list[str]]:
            apps = []
            for app in connections.apps.all():
                grants = connections.apps.grants(app.id)
                apps.append({"app": app, "grants": grants})
            agents = [a.name for a in connections.access.memory.agents.list()]
            return apps, agents

        self.reading += 1
        this_read = self.reading
        self.run(read, lambda found: self.show_apps(found) if this_read == self.reading else None)

    def show_apps(self, found: tuple[list[dict[str, Any]], list[str]]) -> None:
        self.apps, self.agents = found
        rows = []
        for entry in self.apps:
            app, grants = entry["app"], entry["grants"]
            reach = ", ".join(f"{g.agent} ({'read/write' if g.can_write else 'read'})" for g in grants)
            writes = "disconnected" if app.revoked else ("trusted" if app.trusted else "ask first")
            seen = f"{app.last_seen.astimezone():%Y-%m-%d %H:%M}" if app.last_seen else "never"
            rows.append((app.name, reach or "nothing yet", writes, seen))
        tables.set_rows(self.table, rows)
        current = self.agent.currentText()
        self.agent.clear()
        self.agent.addItems(self.agents)
        if current in self.agents:
            self.agent.setCurrentText(current)

    def selected_app(self):
        rows = self.table.selectionModel().selectedRows()
        return self.apps[rows[0].row()]["app"] if rows and rows[0].row() < len(self.apps) else None

    @Slot()
    @reports_errors
    def on_grant_clicked(self) -> None:
        app, agent_name = self.selected_app(), self.agent.currentText()
        if app is None or not agent_name:
            return
        write, trusted = self.may_write.isChecked() or self.trusted.isChecked(), self.trusted.isChecked()
        connections = self.connections

        def grant() -> None:
            agent = connections.access.memory.agents.get_by_name(agent_name)
            connections.apps.grant(app.id, agent.id, can_write=write)
            connections.apps.set_trusted(app.id, trusted)

        self.run(grant, lambda _r: self.refresh())

    @Slot()
    @reports_errors
    def on_token_clicked(self) -> None:
        app = self.selected_app()
        if app is None:
            name, ok = QInputDialog.getText(self, "New HTTP token", "The app's name (for example Open WebUI):")
            if not ok or not name.strip():
                return
        else:
            name = app.name
        connections = self.connections

        def make() -> str:
            found = connections.apps.find(name) or connections.apps.register(name)
            return connections.apps.new_token(found.id)

        self.run(make, lambda token: self.show_token(name, token))

    def show_token(self, name: str, token: str) -> None:
        self.refresh()
        box = QMessageBox(self)
        box.setWindowTitle("HTTP token")
        box.setText(
            literal(
                f"The token for {name}, shown once: give it to the app as a Bearer token, with the URL "
                f"{http_url(self.port)}. A new token ends the old one."
            )
        )
        box.setDetailedText(token)
        QGuiApplication.clipboard().setText(token)
        box.setInformativeText("It has been copied to the clipboard.")
        box.open()

    @Slot()
    @reports_errors
    def on_revoke_clicked(self) -> None:
        app = self.selected_app()
        if app is None:
            return
        answer = QMessageBox.question(
            self,
            "Disconnect",
            literal(f"Disconnect {app.name}? It will reach no memory, and its waiting writes are rejected."),
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.run(lambda: self.connections.revoke(app.id), lambda _n: self.refresh())
