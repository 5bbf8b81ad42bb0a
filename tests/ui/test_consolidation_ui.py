"""Consolidation in the window: an idle pass runs in the worker without blocking the chat, a new
message stops it, and proposed changes are reviewed in a dialog."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt

from memdesk.app.agents import open_consolidator
from memdesk.core.consolidation.consolidator import BUSY
from memdesk.core.consolidation.prompt import FINISH
from memdesk.core.consolidation.store import ACCEPTED, REJECTED, RUNNING
from memdesk.core.runtime.scripted import call, say
from memdesk.core.storage import open_database

CHAT = (
    "My name is Ana and I moved to Porto last spring.",
    "I work night shifts as a nurse at the children's hospital.",
    "I switched from coffee to green tea last month.",
)


def chat(window, runtime, send) -> None:
    for text in CHAT:
        runtime.enqueue(say("Noted."))
        send(window, text)


def idle_pass(qtbot, window, idle_now):
    """What the idle scheduler does when the idle time is up, waiting for the session's result."""
    results = []
    window.worker.consolidation_finished.connect(results.append)
    idle_now(window, "consolidation")
    qtbot.waitUntil(lambda: bool(results), timeout=10_000)
    return results[0]


def test_an_idle_pass_proposes_changes_and_the_user_reviews_them(
    qtbot, services, roomy_runtime, make_window, send, idle_now
):
    services.settings_store.set("consolidation", "ask")
    services.settings_store.set("consolidation_every_turns", 3)
    window = make_window(roomy_runtime)
    chat(window, roomy_runtime, send)
    roomy_runtime.enqueue(
        call("core_memory_append", "a fact", label="human", content="Name: Ana; lives in Porto."),
        call("core_memory_append", "a guess", label="human", content="Likes coffee."),
        call(FINISH, "done"),
    )
    result = idle_pass(qtbot, window, idle_now)
    assert result.proposed == 2
    qtbot.waitUntil(lambda: "(2)" in window.consolidation.review_action.text())
    assert "Review proposed memory changes" in window.statusBar().currentMessage()

    window.consolidation.open_review()
    qtbot.waitUntil(lambda: window.consolidation.dialog is not None and window.consolidation.dialog.isVisible())
    dialog = window.consolidation.dialog
    assert dialog.list.count() == 2
    dialog.list.item(1).setCheckState(Qt.CheckState.Unchecked)  # the wrong one
    with qtbot.waitSignal(dialog.loaded):  # the proposals left are read again
        dialog.apply_button.click()
        assert not dialog.reject_button.isEnabled()  # nothing decided twice meanwhile
    human = services.memory.core.get(window.state.agent_id, "human").value
    assert "Name: Ana; lives in Porto." in human and "coffee" not in human
    qtbot.waitUntil(
        lambda: "lives in Porto" in window.memory.editors["human"].editor.toPlainText()
    )  # the panel shows it
    with qtbot.waitSignal(dialog.loaded):
        dialog.reject_button.click()
    assert dialog.empty.isVisible() and not dialog.apply_button.isEnabled()
    statuses = [
        c.status
        for c in open_consolidator(services, services.agents.get(window.state.agent_id), None).store.recent(
            window.state.agent_id
        )
    ]
    assert sorted(statuses) == [ACCEPTED, REJECTED]
    dialog.close()
    qtbot.waitUntil(lambda: "(" not in window.consolidation.review_action.text())


def test_a_message_stops_a_running_pass_and_the_chat_never_waits_for_it(
    qtbot, services, roomy_runtime, make_window, send, idle_now
):
    services.settings_store.set("consolidation", "apply")
    services.settings_store.set("consolidation_every_turns", 3)
    window = make_window(roomy_runtime)
    chat(window, roomy_runtime, send)
    before = services.memory.core.get(window.state.agent_id, "human").value
    holder = {}

    def slow_call(_messages):
        holder["token"] = window.worker.cancel_token  # the running pass's
        holder["started"] = True
        deadline = time.monotonic() + 10
        while not holder["token"].cancelled and time.monotonic() < deadline:
            time.sleep(0.01)  # a long generation, until the user interrupts it
        return call("core_memory_append", "a fact", label="human", content="Name: Ana.")

    roomy_runtime.enqueue(slow_call)
    idle_now(window, "consolidation")
    qtbot.waitUntil(lambda: holder.get("started", False), timeout=10_000)
    assert not window.state.busy and window.chat.send_button.isEnabled()  # the user may type meanwhile

    roomy_runtime.enqueue(say("Welcome back!"))
    send(window, "I'm back")
    assert holder["token"].cancelled
    assert "Welcome back!" in window.chat.transcript.toPlainText()
    assert (
        services.memory.core.get(window.state.agent_id, "human").value == before
    )  # the interrupted call changed nothing
    store = open_consolidator(services, services.agents.get(window.state.agent_id), None).store
    assert store.unfinished(window.state.agent_id).status == RUNNING  # resumed at the next idle time


def test_the_consolidation_mode_is_a_choice_in_settings_and_stops_the_idle_timer(
    qtbot, services, roomy_runtime, make_window
):
    from memdesk.ui.dialogs.settings import SettingsDialog

    window = make_window(roomy_runtime)
    idle = window.worker.session.idle
    assert idle.armed("consolidation") is not None  # on by default ("ask"), counting idle time
    dialog = SettingsDialog(services.settings, services.paths)
    qtbot.addWidget(dialog)
    combo = dialog.editors["consolidation"]
    assert [combo.itemText(i) for i in range(combo.count())] == ["off", "apply", "ask"] and combo.currentText() == "ask"
    combo.setCurrentText("off")
    window.window_settings.apply(dialog.changes())
    assert services.settings.consolidation == "off" and idle.armed("consolidation") is None


def test_an_idle_pass_that_meets_a_busy_store_says_nothing_and_runs_at_the_next_idle_moment(
    qtbot, services, roomy_runtime, make_window, send, idle_now
):
    """Another writer (the graph extractor catching up, an ingestion) holding the store past the
    pass's busy timeout is no error for the user: the idle timer starts again, and the next pass
    does the work."""
    services.settings_store.set("consolidation", "apply")
    services.settings_store.set("consolidation_every_turns", 3)
    window = make_window(roomy_runtime)
    chat(window, roomy_runtime, send)
    roomy_runtime.enqueue(
        call("core_memory_append", "a fact", label="human", content="Name: Ana."), call(FINISH, "done")
    )
    results = []
    window.worker.consolidation_finished.connect(results.append)
    other_writer = open_database(services.paths.database)
    other_writer.execute("BEGIN IMMEDIATE")
    try:
        idle_now(window, "consolidation")
        qtbot.waitUntil(lambda: bool(results), timeout=60_000)  # the worker's connection waits out its busy timeout
    finally:
        other_writer.execute("ROLLBACK")
        other_writer.close()
    assert results[0].status == BUSY and window.worker.session.idle.armed("consolidation") is not None
    assert not any("locked" in message for message in window.hub.messages)
    idle_now(window, "consolidation")  # the next idle moment
    qtbot.waitUntil(lambda: len(results) == 2, timeout=60_000)
    assert results[1].status == "done" and results[1].applied == 1
    assert "Name: Ana." in services.memory.core.get(window.state.agent_id, "human").value
