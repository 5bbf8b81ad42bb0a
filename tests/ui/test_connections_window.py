"""Other AI apps in the window (issue 30), real widgets offscreen: a write an app asked for over MCP
waits in Approvals and is applied, edited or rejected there; the access log shows who read what;
Settings > Connections connects an app in one step and manages what it may reach; MCP over
loopback HTTP follows the setting while the window runs; enabling an agent's MCP server asks
first, showing the tools it offers and those the agent cannot use."""

from __future__ import annotations

import json
import socket

import pytest
from PySide6.QtWidgets import QInputDialog, QMessageBox

from memdesk.core.connections.gate import Connections
from memdesk.core.runtime.scripted import ScriptedRuntime
from memdesk.core.tools.mcp_client.servers import McpServers
from memdesk.mcp.client_configs import CLIENTS
from memdesk.ui.dialogs import connections as connections_page
from memdesk.ui.dialogs import mcp_servers as servers_dialog
from memdesk.ui.dialogs.connections import ConnectionsPage
from memdesk.ui.dialogs.mcp_servers import McpServersDialog
from tests.ui.test_names_shown_as_text import rendered


@pytest.fixture
def window(make_window):
    return make_window(ScriptedRuntime(context_window=32768))


@pytest.fixture
def app_writes(services):
    """``app_writes(text)``: Claude Desktop (may write, not trusted) asks to add ``text`` to the
    human block of the agent the window shows, as it would over MCP; returns the approval's id."""
    connections = Connections(services.memory, services.clock, keep_days=lambda: 90)

    def write(text: str, agent_id: int) -> int:
        apps = connections.apps
        app = apps.find("Claude Desktop") or apps.register("Claude Desktop")
        apps.grant(app.id, agent_id, can_write=True)
        caller = connections.caller(apps.get(app.id))
        asked = connections.write(caller, None, "core_memory_append", {"label": "human", "content": text}, "told me")
        return asked["approval"]

    return write


def _refresh(qtbot, settle, window, panel) -> None:
    panel.refresh()
    settle(window)


def test_an_apps_write_waits_in_approvals_and_is_applied_or_rejected_there(qtbot, settle, window, services, app_writes):
    agent_id = window.state.agent_id
    app_writes("Plays the cello", agent_id)
    app_writes("Hates Mondays", agent_id)
    approvals = window.panels.approvals
    _refresh(qtbot, settle, window, approvals)
    assert approvals.table.rowCount() == 2 and window.docks["Approvals"].windowTitle() == "Approvals (2)"
    approvals.table.selectRow(0)
    assert "Plays the cello" in approvals.detail.toPlainText() and "told me" in approvals.detail.toPlainText()
    approvals.accept_button.click()
    qtbot.waitUntil(lambda: approvals.table.rowCount() == 1, timeout=10_000)
    approvals.table.selectRow(0)
    approvals.reject_button.click()
    qtbot.waitUntil(lambda: approvals.table.rowCount() == 0, timeout=10_000)
    settle(window)
    assert services.memory.core.get(agent_id, "human").value == "Plays the cello"
    assert window.docks["Approvals"].windowTitle() == "Approvals"
    assert approvals.empty.isVisibleTo(approvals)


def test_the_user_may_edit_a_write_before_it_is_applied(qtbot, settle, window, services, app_writes, monkeypatch):
    agent_id = window.state.agent_id
    app_writes("Lives in Rome", agent_id)
    approvals = window.panels.approvals
    _refresh(qtbot, settle, window, approvals)
    approvals.table.selectRow(0)
    monkeypatch.setattr(QInputDialog, "getMultiLineText", lambda *args, **kwargs: ("Lives in Milan", True))
    approvals.edit_button.click()
    qtbot.waitUntil(lambda: approvals.table.rowCount() == 0, timeout=10_000)
    settle(window)
    assert services.memory.core.get(agent_id, "human").value == "Lives in Milan"
    change = services.memory.core.history.latest_for_block(agent_id, "human")
    assert change.source == "mcp" and "Claude Desktop" in change.note


def test_the_access_log_shows_which_app_read_what_without_the_text(qtbot, settle, window, services):
    agent_id = window.state.agent_id
    connections = Connections(services.memory, services.clock, keep_days=lambda: 90)
    app = connections.apps.register("Cursor")
    connections.apps.grant(app.id, agent_id)
    caller = connections.caller(connections.apps.get(app.id))
    connections.read(caller, None, "core_memory_read", lambda a: connections.access.block(a, "persona"))
    log = window.panels.access_log
    window.docks["Access log"].show()
    window.docks["Access log"].raise_()
    _refresh(qtbot, settle, window, log)
    cells = [log.table.item(0, column).text() for column in range(log.table.columnCount())]
    assert cells[1:5] == ["Cursor", services.agents.get(agent_id).name, "read", "core_memory_read"]
    persona = services.memory.core.get(agent_id, "persona").value
    assert persona[:20] not in " ".join(cells)
    assert [log.app_filter.itemText(i) for i in range(log.app_filter.count())] == ["Every app", "Cursor"]


def test_settings_connections_writes_an_apps_config_after_showing_the_change(
    qtbot, settle, window, services, tmp_path, monkeypatch
):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".cursor").mkdir()
    config = tmp_path / ".cursor" / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"files": {"command": "fs"}}}))
    page = ConnectionsPage(window.panels.approvals.connections, window.jobs.run, 47730)
    qtbot.addWidget(page)
    page.client.setCurrentIndex(list(CLIENTS).index("cursor"))
    shown_config = json.loads(page.config.toPlainText())["mcpServers"]["memdesk"]
    assert shown_config["args"] == ["--app", "Cursor"]
    shown: list[str] = []

    def exec_(box):
        shown.append(box.detailedText())
        return QMessageBox.StandardButton.Save

    monkeypatch.setattr(QMessageBox, "exec", exec_)
    page.write_button.click()
    settle(window)
    assert '+    "memdesk": {' in shown[0]
    assert set(json.loads(config.read_text())["mcpServers"]) == {"files", "memdesk"}
    qtbot.waitUntil(lambda: page.table.rowCount() == 1, timeout=10_000)
    assert page.table.item(0, 0).text() == "Cursor" and page.table.item(0, 1).text() == "nothing yet"
    page.table.selectRow(0)
    page.agent.setCurrentIndex(0)
    page.may_write.setChecked(True)
    page.grant_button.click()
    qtbot.waitUntil(lambda: "read/write" in page.table.item(0, 1).text(), timeout=10_000)


def test_the_connected_apps_show_the_newest_read_when_reads_end_out_of_order(qtbot, services):
    """The window's jobs run two at a time: a read begun before a change can end after the read
    begun after it, and must not put the list back as it was."""
    connections = Connections(services.memory, services.clock, keep_days=lambda: 90)
    reads: list[tuple[object, object]] = []
    page = ConnectionsPage(connections, lambda work, done: reads.append((work(), done)), 47730)
    qtbot.addWidget(page)
    connections.apps.register("Cursor")
    page.refresh()
    (before, show_before), (after, show_after) = reads
    show_after(after)
    show_before(before)
    assert page.table.rowCount() == 1 and page.table.item(0, 0).text() == "Cursor"


def test_a_token_is_shown_once_and_disconnecting_ends_it(qtbot, settle, window, monkeypatch):
    connections = window.panels.approvals.connections
    page = ConnectionsPage(connections, window.jobs.run, 47730)
    qtbot.addWidget(page)
    tokens: list[str] = []
    monkeypatch.setattr(QInputDialog, "getText", lambda *args, **kwargs: ("Open WebUI", True))
    monkeypatch.setattr(connections_page.ConnectionsPage, "show_token", lambda self, name, token: tokens.append(token))
    page.on_token_clicked()
    qtbot.waitUntil(lambda: bool(tokens), timeout=10_000)
    assert connections.apps.by_token(tokens[0]).name == "Open WebUI"
    page.refresh()
    qtbot.waitUntil(lambda: page.table.rowCount() == 1, timeout=10_000)
    page.table.selectRow(0)
    monkeypatch.setattr(QMessageBox, "question", lambda *args, **kwargs: QMessageBox.StandardButton.Yes)
    page.revoke_button.click()
    qtbot.waitUntil(lambda: page.table.item(0, 2).text() == "disconnected", timeout=10_000)
    assert connections.apps.by_token(tokens[0]) is None


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.processes  # the window serves HTTP from a child process
def test_loopback_http_is_served_while_the_setting_is_on_and_only_then(qtbot, window):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert window.connections.url is None
    window.window_settings.apply({"mcp_http_port": port, "mcp_http": True})
    assert window.connections.url == f"http://127.0.0.1:{port}/mcp" and _listening(port)
    window.window_settings.apply({"mcp_http": False})
    assert window.connections.url is None and not _listening(port)


def test_enabling_an_mcp_server_asks_showing_its_tools_and_those_the_agent_cannot_use(
    qtbot, settle, window, services, monkeypatch
):
    agent_id = window.state.agent_id
    store = McpServers(services.db, services.clock)
    store.add(agent_id, "notes", command=["notes-server"])
    offered = [
        {"name": "add_note", "description": "Add a <b>note</b>", "inputSchema": {"type": "object", "properties": {}}},
        {"name": "odd", "inputSchema": {"type": "object", "properties": {"x": {"anyOf": []}}}},
    ]
    monkeypatch.setattr(servers_dialog, "fetch_tools", lambda server, seconds: offered)
    asked: list[str] = []

    def question(parent, title, text, *args, **kwargs):
        asked.append(text)
        return QMessageBox.StandardButton.Yes

    monkeypatch.setattr(QMessageBox, "question", question)
    dialog = McpServersDialog(store, agent_id, "sam", window.jobs.run, lambda: 5, window)
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.list.count() == 1, timeout=10_000)
    dialog.list.setCurrentRow(0)
    with qtbot.waitSignal(dialog.tools_changed, timeout=10_000):
        dialog.enable_button.click()
    shown = rendered(asked[0])  # what the question draws: the server's words as text, not markup
    assert "notes__add_note: (MCP server notes) Add a <b>note</b>" in shown and "odd: argument x uses anyOf" in shown
    assert store.enabled(agent_id)[0].tools == tuple(offered)
    dialog.close()
