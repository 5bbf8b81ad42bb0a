"""The memory history view, the block editor's last change, and agent files in the window,
driven as a user would."""

from __future__ import annotations

import json

from PySide6.QtCore import Qt, QUrl

from memdesk.core.runtime.scripted import call, say
from memdesk.core.tools.imported import ImportedTools
from memdesk.ui.common import palette
from memdesk.ui.panels.transcript import CONTEXT_DIVIDER


def click(qtbot, button):
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_an_agent_edit_shows_with_its_diff_and_its_message(make_window, roomy_runtime, send, qtbot, services, settle):
    roomy_runtime.enqueue(
        call("core_memory_append", "note it", False, label="human", content="Likes tea"), say("Noted!")
    )
    window = make_window(roomy_runtime)
    send(window, "I like tea")
    history = window.history
    assert history.table.rowCount() >= 1 and not history.empty.isVisible()
    assert history.table.item(0, 1).text() == "the agent" and history.table.item(0, 2).text() == "agent updated human"
    history.table.selectRow(0)
    settle(window)  # the change's cause is read off the GUI thread
    details = history.details.toHtml()
    assert "Likes tea" in details and palette.tint(palette.GREEN) in details  # the added text, in green
    assert "Answering your message “I like tea”" in history.details.toPlainText()
    assert "core_memory_append" in history.details.toPlainText()
    change = history.selected()
    click(qtbot, history.show_button)  # the call is hidden detail: the view turns details on
    settle(window)  # the message is read off the GUI thread
    assert window.chat.details.isChecked() and window.chat.transcript.highlighted_message == change.step_id
    history.details.anchorClicked.emit(QUrl(f"message:{change.message_id}"))
    settle(window)
    assert window.chat.transcript.highlighted_message == change.message_id
    editor = window.memory.editors["human"]
    assert editor.last_change.text().startswith("changed by the agent")
    click(qtbot, editor.diff_button)
    assert editor.diff_view.isVisible() and "Likes tea" in editor.diff_view.toPlainText()


def test_the_source_message_is_one_click_away_even_when_evicted(
    make_window, roomy_runtime, send, qtbot, services, settle
):
    roomy_runtime.enqueue(
        call("core_memory_append", "note it", False, label="human", content="Has a cat"),
        say("Noted!"),
        say("Hello again"),
    )
    window = make_window(roomy_runtime)
    send(window, "I have a cat")
    send(window, "hello")
    messages = services.memory.recall.all(window.state.agent_id)
    services.agents.update(window.state.agent_id, context_start_id=messages[-2].id, evicted_count=len(messages) - 2)
    window.switching.select(window.state.agent_id)
    settle(window)
    assert CONTEXT_DIVIDER in window.chat.transcript.toPlainText()
    with qtbot.waitSignal(window.history.loaded):
        window.history.set_agent(window.state.agent_id)
    change = next(c for c in window.history.changes if c.after and "Has a cat" in c.after)
    window.history.select_change(change.id)
    assert change.message_id < messages[-2].id  # it answered a message now out of context
    window.history.details.anchorClicked.emit(QUrl(f"message:{change.message_id}"))
    settle(window)
    assert window.chat.transcript.highlighted_message == change.message_id


def test_the_block_editor_says_who_changed_it_and_when(make_window, roomy_runtime, qtbot, services, clock, settle):
    window = make_window(roomy_runtime)
    editor = window.memory.editors["persona"]
    editor.editor.setPlainText("I am Sam.")
    click(qtbot, editor.save_button)
    settle(window)  # the change is read back off the GUI thread
    assert editor.last_change.text() == "changed by you just now"
    clock.advance(minutes=2)
    window.memory.refresh_changes()
    settle(window)
    assert editor.last_change.text() == "changed by you 2 min ago"
    click(qtbot, editor.history_button)
    settle(window)
    assert window.history.scope.currentData() == "block:persona" and window.history.selected().label == "persona"


def test_revert_is_recorded_and_a_conflict_is_shown_not_overwritten(
    make_window, roomy_runtime, send, qtbot, services, settle
):
    roomy_runtime.enqueue(
        call("core_memory_replace", "fix", False, label="human", old_content="green tea", new_content="coffee"),
        say("ok"),
    )
    window = make_window(roomy_runtime)
    editor = window.memory.editors["human"]
    editor.editor.setPlainText("Likes green tea")
    click(qtbot, editor.save_button)
    mine = services.memory.core.history.latest_for_block(window.state.agent_id, "human")
    send(window, "actually I drink coffee")  # the agent edits the same words
    history = window.history
    history.show_block("human")
    settle(window)
    history.select_change(mine.id)
    click(qtbot, history.revert_button)
    dialog = history.revert_dialog
    assert dialog.isVisible() and dialog.revert_button.text() == "Revert anyway"
    assert (
        "the agent changed it 1 more time" in dialog.explanation.text() and "agent updated human" in dialog.later.text()
    )
    click(qtbot, dialog.cancel_button)
    assert services.memory.core.get(window.state.agent_id, "human").value == "Likes coffee"  # nothing overwritten
    click(qtbot, history.revert_button)
    click(qtbot, history.revert_dialog.revert_button)
    value = services.memory.core.get(window.state.agent_id, "human").value
    assert value == services.memory.core.history.get(mine.id).before  # what it was before the user's edit
    settle(window)
    top = history.changes[0]
    assert top.reverts == mine.id and history.table.item(0, 2).text() == "user reverted human"
    assert window.memory.editors["human"].editor.toPlainText() == value  # the editor follows
    click(qtbot, history.undo_button)  # undo the revert: a plain revert, no conflict
    assert history.revert_dialog.revert_button.text() == "Revert"
    click(qtbot, history.revert_dialog.revert_button)
    assert services.memory.core.get(window.state.agent_id, "human").value == "Likes coffee"


def test_import_summary_and_imported_tools(make_window, roomy_runtime, qtbot, services, agentfiles):
    window = make_window(roomy_runtime)
    window.transfer_actions.import_agent(agentfiles / "customer_service.af")
    qtbot.waitUntil(
        lambda: (
            window.transfer_actions.summary_dialog is not None and window.transfer_actions.summary_dialog.isVisible()
        ),
        timeout=10_000,
    )
    summary = window.transfer_actions.summary_dialog
    text = summary.report.toPlainText()
    assert "customer_service: 2 memory blocks" in text and "4 tools imported disabled" in text
    assert "Not imported" in text and "gpt-4o-mini" in text and "Adjusted on import" in text
    assert summary.tools_button.isVisible() and summary.open_button.text() == "Open customer_service"
    click(qtbot, summary.tools_button)
    tools = window.transfer_actions.tools_dialog
    assert tools.isVisible() and not summary.isVisible()
    names = [tools.list.item(i).text() for i in range(tools.list.count())]
    assert names == [
        "cancel_order — disabled",
        "check_order_status — disabled",
        "escalate — disabled",
        "terminate_chat — disabled",
    ]
    tools.list.setCurrentRow(0)
    assert tools.code.toPlainText().startswith("def cancel_order(order_number: int, reason: str):")
    click(qtbot, tools.enable_button)
    assert tools.confirm.isVisible()
    said = tools.confirm_label.text()  # what enabling means, truthfully
    assert (
        "only when the agent calls cancel_order and you allow that call" in said and "separate Python process" in said
    )
    assert "stopped after 30 seconds" in said and "MemDesk's included, and use the network" in said
    agent_id = services.agents.get_by_name("customer_service").id
    assert not ImportedTools(services.db, services.clock).get(agent_id, "cancel_order").enabled  # not before confirming
    with qtbot.waitSignal(tools.tools_changed):
        click(qtbot, tools.confirm_button)
    assert ImportedTools(services.db, services.clock).get(agent_id, "cancel_order").enabled
    assert tools.list.item(0).text() == "cancel_order — enabled" and tools.disable_button.isEnabled()


def test_export_af_and_import_it_back_from_the_window(
    make_window, roomy_runtime, send, qtbot, services, tmp_path, settle
):
    roomy_runtime.enqueue(say("Hello from the past."))
    window = make_window(roomy_runtime)
    send(window, "hello")
    path = tmp_path / "companion.af"
    window.transfer_actions.export_agent(path, "af")
    qtbot.waitUntil(lambda: path.exists() and window.jobs.pending == 0, timeout=30_000)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["agents"][0]["name"] == "Companion" and "memdesk" in document
    window.transfer_actions.import_agent(path)
    qtbot.waitUntil(
        lambda: (
            window.transfer_actions.summary_dialog is not None and window.transfer_actions.summary_dialog.isVisible()
        ),
        timeout=10_000,
    )
    assert "Everything in the file was imported." in window.transfer_actions.summary_dialog.report.toPlainText()
    click(qtbot, window.transfer_actions.summary_dialog.open_button)
    settle(window)
    assert services.agents.get(window.state.agent_id).name == "Companion (2)"
    assert "Hello from the past." in window.chat.transcript.toPlainText()
