"""Core memory, archival, agents, consent, heartbeats, settings and budget panels, driven as a user would."""

from __future__ import annotations

import json

from PySide6.QtCore import QPoint, Qt

from memdesk.core.base.settings_table import SETTINGS
from memdesk.core.runtime.scripted import call, say
from memdesk.ui.common import palette
from memdesk.ui.dialogs.consent import ConsentDialog
from memdesk.ui.dialogs.settings import SettingsDialog


def test_editing_a_block_while_the_agent_edits_it(make_window, roomy_runtime, send, qtbot, services):
    roomy_runtime.enqueue(
        call("core_memory_append", "note", heartbeat=False, label="human", content="Likes tea"), say("Noted.")
    )
    window = make_window(roomy_runtime)
    editor = window.memory.editors["human"]
    editor.editor.setPlainText("")
    qtbot.keyClicks(editor.editor, "Works as a gardener")
    assert editor.save_button.isEnabled() and "19 / 2000" in editor.counter.text()
    send(window, "I like tea")  # the agent edits the same block meanwhile
    assert editor.editor.toPlainText() == "Works as a gardener"  # the user's typing is kept
    assert palette.tint(palette.YELLOW) in editor.styleSheet()  # highlighted: the agent changed it
    qtbot.mouseClick(editor.save_button, Qt.MouseButton.LeftButton)
    assert editor.conflict.isVisible() and "Likes tea" in editor.conflict_label.text()
    assert "Likes tea" in services.memory.core.get(window.state.agent_id, "human").value  # nothing lost yet
    qtbot.mouseClick(editor.keep_mine, Qt.MouseButton.LeftButton)
    assert services.memory.core.get(window.state.agent_id, "human").value == "Works as a gardener"
    assert not editor.conflict.isVisible()


def test_take_the_agents_version_and_limits(make_window, roomy_runtime, send, qtbot, services):
    roomy_runtime.enqueue(
        call("core_memory_append", "note", heartbeat=False, label="human", content="Likes tea"), say("Noted.")
    )
    window = make_window(roomy_runtime)
    editor = window.memory.editors["human"]
    qtbot.keyClicks(editor.editor, " and coffee")
    send(window, "I like tea")
    editor.on_save_clicked()
    qtbot.mouseClick(editor.take_agents, Qt.MouseButton.LeftButton)
    assert "Likes tea" in editor.editor.toPlainText() and not editor.dirty
    editor.editor.setPlainText("x" * 2001)
    assert not editor.save_button.isEnabled() and "over the limit" in editor.counter.text()
    editor.on_revert_clicked()
    editor.read_only.setChecked(True)
    assert services.memory.core.get(window.state.agent_id, "human").read_only


def test_add_and_remove_custom_blocks(make_window, roomy_runtime, services):
    window = make_window(roomy_runtime)
    window.memory.add_block("projects", "MemDesk")
    assert services.memory.core.get(window.state.agent_id, "projects").value == "MemDesk"
    assert "projects" in window.memory.editors
    window.memory.add_block("bad label!")
    assert "letters, digits or underscores" in window.hub.messages[-1]
    window.memory.remove_block("projects")
    assert (
        services.memory.core.get(window.state.agent_id, "projects") is None and "projects" not in window.memory.editors
    )


def test_archival_hits_search_edit_and_delete(make_window, roomy_runtime, send, qtbot, services, settle):
    roomy_runtime.enqueue(
        call("archival_memory_insert", "store", heartbeat=True, content="The spare key is under the blue flower pot."),
        call("archival_memory_search", "look", heartbeat=True, query="spare key"),
        say("Found it."),
    )
    window = make_window(roomy_runtime)
    send(window, "Remember where the key is, then check")
    assert window.archival.hits and window.archival.hits[0][0] == "archival"
    window.archival.hits_table.selectRow(0)
    assert "blue flower pot" in window.archival.detail.toPlainText()
    services.memory.archival.insert(window.state.agent_id, "Grandma's birthday is on May 3rd.")
    with qtbot.waitSignal(window.archival.loaded):
        window.archival.refresh()
    assert window.archival.passages_table.rowCount() == 2
    qtbot.keyClicks(window.archival.search_box, "birthday")
    with qtbot.waitSignal(window.archival.hits_table.model().rowsInserted, timeout=5_000, raising=False):
        qtbot.keyClick(window.archival.search_box, Qt.Key.Key_Return)
    qtbot.waitUntil(
        lambda: window.jobs.pending == 0 and "May 3rd" in window.archival.hits_table.item(0, 2).text(), timeout=30_000
    )
    first = window.archival.passages[0]
    window.archival.edit_passage(first.id, "Grandma's birthday is on June 9th.")
    settle(window, timeout=30_000)
    assert services.memory.archival.get(first.id).text.endswith("June 9th.")
    window.archival.passages_table.selectAll()
    assert len(window.archival.selected_passages()) == 2
    window.archival.delete_passages([p.id for p in window.archival.selected_passages()])
    settle(window)
    assert services.memory.archival.count(window.state.agent_id) == 0 and window.archival.passages_table.rowCount() == 0


def test_agents_create_switch_rename_duplicate_delete(make_window, roomy_runtime, send, qtbot, services, settle):
    roomy_runtime.enqueue(say("I am the first agent."))
    window = make_window(roomy_runtime)
    first = window.state.agent_id
    send(window, "hello first")
    window.agent_actions.create("Bob", "You are Bob, a cheerful cook.", "The user likes pasta.")
    settle(window)  # Bob, his conversation and his memory, read off the GUI thread
    assert window.services.agents.get(window.state.agent_id).name == "Bob"
    assert window.chat.transcript.toPlainText().strip() == ""  # Bob has his own conversation
    assert "cheerful cook" in window.memory.editors["persona"].editor.toPlainText()
    # A click while the worker still opens Bob is refused (the user is told); wait as a user would.
    qtbot.waitUntil(lambda: not window.state.busy, timeout=30_000)
    item = window.agents.list.findItems(services.agents.get(first).name, Qt.MatchFlag.MatchExactly)[0]
    window.agents.list.setCurrentItem(item)  # switch back: history restored
    settle(window)
    assert window.state.agent_id == first and "I am the first agent." in window.chat.transcript.toPlainText()
    window.agent_actions.rename(first, "Alice", update_persona=False)
    settle(window)
    assert services.agents.get(first).name == "Alice" and window.windowTitle() == "MemDesk — Alice"
    assert services.settings.last_agent == "Alice"
    window.agent_actions.duplicate(first, "Alice copy")
    qtbot.waitUntil(lambda: window.agents.list.count() == 3, timeout=30_000)
    copy = services.agents.get_by_name("Alice copy")
    assert len(services.memory.recall.all(copy.id)) == len(services.memory.recall.all(first))
    # Deleting the open agent is refused while the worker is busy (here: still opening it after the
    # switch back), as a user would be told; wait as they would.
    qtbot.waitUntil(lambda: not window.state.busy, timeout=10_000)
    window.agent_actions.delete(first)  # the open one: the window moves to another agent
    settle(window)
    assert services.agents.find("Alice") is None and window.state.agent_id != first, window.hub.messages
    assert window.agents.list.count() == 2


def test_export_and_import_from_the_window(make_window, roomy_runtime, send, qtbot, services, tmp_path):
    roomy_runtime.enqueue(say("Exported hello."))
    window = make_window(roomy_runtime)
    send(window, "hello")
    path = tmp_path / "agent.json"
    window.transfer_actions.export_agent(path)
    qtbot.waitUntil(lambda: path.exists() and window.jobs.pending == 0, timeout=30_000)
    assert json.loads(path.read_text())["format"] == "memdesk-agent"
    window.transfer_actions.import_agent(path)
    qtbot.waitUntil(lambda: window.agents.list.count() == 2, timeout=30_000)


def test_consent_allow_once_and_deny(make_window, roomy_runtime, qtbot, services):
    roomy_runtime.enqueue(
        call("append_to_text_file", "write", heartbeat=False, filename="notes.txt", content="first line"),
        say("Written."),  # a user's turn does not end in silence: the loop asks for an answer
        call("append_to_text_file", "again", heartbeat=False, filename="notes.txt", content="second line"),
        say("You did not allow it."),
    )
    window = make_window(roomy_runtime)
    for text, button in (("write it", "allow_once"), ("again", "deny")):
        window.chat.compose.setPlainText(text)
        with qtbot.waitSignal(window.turn_done, timeout=10_000):
            window.chat.on_send_clicked()
            qtbot.waitUntil(lambda: bool(window.consent_dialogs), timeout=30_000)
            dialog = window.consent_dialogs[-1]
            assert (
                isinstance(dialog, ConsentDialog)
                and "append_to_text_file" in dialog.text.text()
                and "notes.txt" in dialog.text.text()
            )
            qtbot.mouseClick(getattr(dialog, button), Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not window.state.busy, timeout=30_000)
    written = (services.paths.agent_files(window.state.agent_id) / "notes.txt").read_text()
    assert "first line" in written and "second line" not in written
    results = [
        m
        for m in services.memory.recall.all(window.state.agent_id)
        if m.kind == "function_result" and m.function_name == "append_to_text_file"
    ]
    assert '"status": "OK"' in results[0].content and '"status": "Failed"' in results[1].content


def test_consent_always_for_this_agent(make_window, roomy_runtime, qtbot, services):
    roomy_runtime.enqueue(
        call("append_to_text_file", "write", heartbeat=True, filename="a.txt", content="one"),
        call("append_to_text_file", "write", heartbeat=False, filename="a.txt", content="two"),
        say("Written twice."),
    )
    window = make_window(roomy_runtime)
    window.chat.compose.setPlainText("write twice")
    with qtbot.waitSignal(window.turn_done, timeout=10_000):
        window.chat.on_send_clicked()
        qtbot.waitUntil(lambda: bool(window.consent_dialogs), timeout=30_000)
        qtbot.mouseClick(window.consent_dialogs[-1].allow_always, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.consent_dialogs, timeout=30_000)  # asked only once
    assert (services.paths.agent_files(window.state.agent_id) / "a.txt").read_text().count("o") >= 2


def test_timed_heartbeat_runs_while_idle(make_window, roomy_runtime, qtbot, idle_now):
    roomy_runtime.enqueue(say("Just checking in."))
    window = make_window(roomy_runtime)
    idle = window.worker.session.idle
    # On by default, as the agent's instructions say (see agent.prompt_state.heartbeat_note).
    assert idle.armed("heartbeat") == 60 * 60
    window.window_settings.apply({"heartbeat_minutes": 5})
    assert idle.armed("heartbeat") == 5 * 60
    window.worker.session.query(lambda agent: None, timeout=10)  # the agent reopened with the setting
    idle_now(window, "heartbeat")
    qtbot.waitUntil(lambda: "Just checking in." in window.chat.transcript.toPlainText(), timeout=10_000)
    # MemDesk's nudge to the model is inner workings: not in the conversation the user reads.
    assert "heartbeat" not in window.chat.transcript.toPlainText()


def test_settings_dialog_is_generated_and_persists(make_window, roomy_runtime, qtbot, services):
    window = make_window(roomy_runtime)
    dialog = SettingsDialog(services.settings, services.paths)
    qtbot.addWidget(dialog)
    assert set(dialog.editors) == {name for name, declared in SETTINGS.items() if not declared.hidden}
    dialog.editors["temperature"].setValue(0.2)
    dialog.editors["http_allowlist"].setText("example.org, wikipedia.org")
    changes = dialog.changes()
    assert changes == {"temperature": 0.2, "http_allowlist": "example.org, wikipedia.org"}
    window.window_settings.apply(changes)
    assert services.settings.temperature == 0.2 and services.settings.http_allowlist == ("example.org", "wikipedia.org")


def test_budget_bar_hover_and_lines(make_window, roomy_runtime, qtbot):
    window = make_window(roomy_runtime)
    qtbot.waitUntil(lambda: window.budget.budget is not None, timeout=30_000)
    bar = window.budget.bar
    bar.resize(800, 34)
    budget = window.budget.budget
    assert (bar.warning_at, bar.eviction_at) == (budget.warning_at, budget.eviction_at)
    x = int(800 * (budget.tokens("system") + budget.tokens("tools") / 2) / budget.window)
    assert bar.section_at(QPoint(x, 10)).name == "tools"
    assert "send_message" in bar.section_at(QPoint(x, 10)).preview


def test_automatic_recall_shows_its_hits_in_the_archival_panel_and_the_budget(
    make_window, roomy_runtime, send, services, qtbot
):
    import json as _json

    roomy_runtime.enqueue(say("Your cat is Tom."))
    window = make_window(roomy_runtime)
    old = services.memory.recall.add(
        window.state.agent_id,
        role="user",
        kind="user_message",
        content=_json.dumps({"type": "user_message", "message": "My cat is called Tom"}),
        created_at=services.clock.now(),
        search_text="My cat is called Tom",
    )
    services.agents.update(window.state.agent_id, context_start_id=old.id + 1, evicted_count=1)  # as after an eviction
    send(window, "What is my cat called?")
    qtbot.waitUntil(lambda: any(kind == "automatic" for kind, _ in window.archival.hits), timeout=30_000)
    table = window.archival.hits_table
    assert table.item(0, 0).text() == "automatic" and "My cat is called Tom" in table.item(0, 2).text()
    rows = {
        window.budget.table.item(r, 0).text(): window.budget.table.item(r, 1).text()
        for r in range(window.budget.table.rowCount())
    }
    assert int(rows["recall"]) > 0
    window.chat.details.setChecked(True)
    assert "Memories found automatically" in window.chat.transcript.toPlainText()
