"""File > MCP servers of this agent…: other programs' tools the agent may use (issue 30).

A server is a command MemDesk starts or an HTTP URL, added disabled. Enable connects to it once
(off the GUI thread), then shows every tool it offers and those the agent cannot use with the
reason (a schema the call grammar cannot keep), and asks: this is the consent to let the agent
see them. Each call the agent makes still asks first, with its arguments in full (the consent
dialog). Nothing of a server's configuration is secret: no token or header is kept.

Signals:
    tools_changed(int): the agent's tools changed (it is opened again with them)
    failed(object): an error for the message bar
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import (
    QDialog,
    QInputDialog,
    QLabel,
    QListWidget,
    QMessageBox,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.tools.mcp_client.connection import fetch_tools
from memdesk.core.tools.mcp_client.servers import McpServer, McpServers
from memdesk.core.tools.mcp_client.tools import Refused, spec_of
from memdesk.ui.common.buttons import GAP, button, button_row
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import literal, set_plain

#: ``run(work, on_done, on_failed)``: ``work`` off the GUI thread, the callbacks back in it.
Run = Callable[..., Any]


QUESTION = "Let the agent use these tools? It still asks you before each call, showing its arguments."


def offer_text(server: McpServer, offered: list[dict[str, Any]]) -> tuple[list[str], str]:
    """The tools the agent could use, and, as plain text, what the server offers and what the agent
    cannot use, with why (a server's words are shown as text, never rendered)."""
    usable, lines, refused = [], [], []
    for tool in offered:
        spec = spec_of(server, tool)
        if isinstance(spec, Refused):
            refused.append(f"• {spec.tool}: {spec.reason}")
        else:
            usable.append(spec.name)
            lines.append(f"• {spec.name}: {spec.description}")
    text = "\n".join([f"{server.name} ({server.where()}) offers:", *lines])
    if refused:
        text += "\n\nThe agent cannot use:\n" + "\n".join(refused)
    return usable, text


class McpServersDialog(QDialog):
    tools_changed = Signal(int)
    failed = Signal(object)

    def __init__(
        self,
        store: McpServers,
        agent_id: int,
        agent_name: str,
        run: Run,
        seconds: Callable[[], float],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.store, self.agent_id, self.run, self.seconds = store, agent_id, run, seconds
        self.servers: list[McpServer] = []
        self.reading = 0  # the newest read of the list (an older one that ends last is not shown)
        self.setWindowTitle(f"MCP servers of {agent_name}")
        self.resize(640, 420)
        layout = QVBoxLayout(self)
        intro = QLabel(
            "Tools of other programs (MCP servers) this agent may use. A server is off until you enable it, "
            "and MemDesk asks you before each call, showing what it sends."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.list = QListWidget()
        self.list.currentRowChanged.connect(lambda _row: self._update_buttons())
        layout.addWidget(self.list, 1)
        self.status = QLabel()
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.add_button = button("Add…", self.on_add_clicked)
        self.enable_button = button("Enable…", self.on_enable_clicked)
        self.disable_button = button("Disable", self.on_disable_clicked)
        self.remove_button = button("Remove", self.on_remove_clicked)
        layout.addLayout(button_row(self.add_button, self.enable_button, self.disable_button, self.remove_button, GAP))
        self.refresh()

    def refresh(self) -> None:
        self.reading += 1
        this_read = self.reading
        self.run(
            lambda: self.store.all(self.agent_id),
            lambda servers: self.show_servers(servers) if this_read == self.reading else None,
            self.failed.emit,
        )

    def show_servers(self, servers: list[McpServer]) -> None:
        self.servers = servers
        self.list.clear()
        for server in servers:
            state = f"on, {len(server.tools)} tool(s)" if server.enabled else "off"
            self.list.addItem(f"{server.name}  ({state})  {server.where()}")
        if not servers:
            self.status.setText("No server yet: Add… one (a command such as npx -y PACKAGE, or a URL).")
        self._update_buttons()

    def selected(self) -> McpServer | None:
        row = self.list.currentRow()
        return self.servers[row] if 0 <= row < len(self.servers) else None

    def _update_buttons(self) -> None:
        server = self.selected()
        self.enable_button.setEnabled(server is not None)
        self.disable_button.setEnabled(server is not None and server.enabled)
        self.remove_button.setEnabled(server is not None)

    @Slot()
    @reports_errors
    def on_add_clicked(self) -> None:
        name, ok = QInputDialog.getText(self, "Add an MCP server", "Its name (letters and digits):")
        if not ok or not name.strip():
            return
        where, ok = QInputDialog.getText(
            self, "Add an MCP server", "The command that starts it, or its http:// or https:// URL:"
        )
        if not ok or not where.strip():
            return
        url = where.strip() if where.strip().startswith(("http://", "https://")) else ""
        command = None if url else shlex.split(where)
        self.run(
            lambda: self.store.add(self.agent_id, name, command=command, url=url),
            lambda _s: self.refresh(),
            self.failed.emit,
        )

    @Slot()
    @reports_errors
    def on_enable_clicked(self) -> None:
        server = self.selected()
        if server is None:
            return
        set_plain(self.status, f"Connecting to {server.name}…")
        self.enable_button.setEnabled(False)
        self.run(
            lambda: fetch_tools(server, seconds=self.seconds()),
            lambda offered: self.confirm_enable(server, offered),
            self.on_connect_failed,
        )

    @reports_errors
    def on_connect_failed(self, error: BaseException) -> None:
        self.status.setText("")
        self._update_buttons()
        self.failed.emit(error)

    def confirm_enable(self, server: McpServer, offered: list[dict[str, Any]]) -> bool:
        self.status.setText("")
        self._update_buttons()
        usable, text = offer_text(server, offered)
        if not usable:
            QMessageBox.information(self, "No usable tool", literal(text))
            return False
        answer = QMessageBox.question(self, f"Enable {server.name}?", literal(f"{text}\n\n{QUESTION}"))
        if answer != QMessageBox.StandardButton.Yes:
            return False
        self.run(lambda: self.store.enable(self.agent_id, server.name, offered), self._changed, self.failed.emit)
        return True

    @Slot()
    @reports_errors
    def on_disable_clicked(self) -> None:
        server = self.selected()
        if server is not None:
            self.run(lambda: self.store.disable(self.agent_id, server.name), self._changed, self.failed.emit)

    @Slot()
    @reports_errors
    def on_remove_clicked(self) -> None:
        server = self.selected()
        if server is None:
            return
        if QMessageBox.question(self, "Remove", literal(f"Remove {server.name}?")) == QMessageBox.StandardButton.Yes:
            self.run(lambda: self.store.remove(self.agent_id, server.name), self._changed, self.failed.emit)

    def _changed(self, _result: object = None) -> None:
        self.tools_changed.emit(self.agent_id)
        self.refresh()
