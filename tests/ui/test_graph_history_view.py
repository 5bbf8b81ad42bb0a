"""Knowledge-graph changes in the window's History view, driven as a user would: an edit in the
Knowledge panel shows in the history (filtered to the graph), reverting it there changes the
Knowledge panel, and the panel's Ctrl+Z is itself a recorded change."""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from memdesk.core.runtime.scripted import ScriptedRuntime


def click(qtbot, button):
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def entity_names(panel) -> list[str]:
    return [panel.entity_table.item(r, 0).text().split("  (")[0] for r in range(panel.entity_table.rowCount())]


def settled(qtbot, window) -> None:
    """What the panels asked to read (off the GUI thread) is shown."""
    qtbot.waitUntil(lambda: not window.reads.busy, timeout=10_000)


def show_scope(qtbot, window, data: str) -> None:
    window.history.scope.setCurrentIndex(window.history.scope.findData(data))
    settled(qtbot, window)


def test_a_knowledge_panel_edit_shows_in_the_history_and_is_reverted_there(make_window, qtbot, services):
    window = make_window(ScriptedRuntime(context_window=32768))
    agent_id = window.state.agent_id
    graph = services.memory.graph
    bob = graph.resolve(agent_id, "Bob", "person", author="extractor")
    panel, history = window.knowledge, window.history
    panel.refresh()
    panel.select_entity(bob)
    settled(qtbot, window)
    assert panel.edits.rename_entity("Robert")
    show_scope(qtbot, window, "graph_entities")
    assert (
        history.table.item(0, 1).text() == "you"
        and history.table.item(0, 2).text() == "user updated graph entity Robert"
    )
    assert [history.table.item(r, 2).text() for r in range(history.table.rowCount())][
        -1
    ] == "extractor created graph entity Bob"
    show_scope(qtbot, window, "graph_facts")
    assert history.empty.isVisible()  # no fact changed yet
    show_scope(qtbot, window, "graph")
    history.table.selectRow(0)
    settled(qtbot, window)
    assert history.revert_button.isEnabled()
    assert "Bob" in history.details.toPlainText() and "Robert" in history.details.toPlainText()  # the diff
    click(qtbot, history.revert_button)
    dialog = history.revert_dialog
    assert dialog.isVisible() and dialog.revert_button.text() == "Revert"
    click(qtbot, dialog.revert_button)
    assert graph.entity(bob).name == "Bob"
    settled(qtbot, window)
    assert "Bob" in entity_names(panel) and "Robert" not in entity_names(panel)  # the panel follows
    top = history.changes[0]
    assert top.reverts is not None and history.table.item(0, 2).text() == "user reverted graph entity Robert"


def test_the_knowledge_panels_undo_is_recorded_in_the_history(make_window, qtbot, services):
    window = make_window(ScriptedRuntime(context_window=32768))
    agent_id = window.state.agent_id
    graph = services.memory.graph
    paris = graph.resolve(agent_id, "Paris", "place", author="extractor")
    panel, history = window.knowledge, window.history
    panel.refresh()
    panel.select_entity(paris)
    settled(qtbot, window)
    assert panel.edits.delete_entity()
    settled(qtbot, window)
    assert "Paris" not in entity_names(panel)
    assert history.changes[0].describe() == "user deleted graph entity Paris"  # the history refreshed on the edit
    assert panel.undo_button.isEnabled() and "user deleted graph entity Paris" in panel.undo_button.toolTip()
    window.docks["Knowledge"].raise_()
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=30_000)
    panel.entity_table.setFocus()
    qtbot.waitUntil(panel.entity_table.hasFocus, timeout=30_000)
    qtbot.keyClick(panel.entity_table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    settled(qtbot, window)
    assert "Paris" in entity_names(panel)
    undo = history.changes[0]
    assert (undo.source, undo.action, undo.reverts) == ("user", "create", history.changes[1].id)
    assert not panel.undo_button.isEnabled()  # the extractor's own change is not the user's to undo here


def test_a_conflicting_graph_revert_asks_before_overwriting(make_window, qtbot, services, clock):
    window = make_window(ScriptedRuntime(context_window=32768))
    agent_id = window.state.agent_id
    graph = services.memory.graph
    ann, london, paris = (
        graph.resolve(agent_id, n, k) for n, k in (("Ann", "person"), ("London", "place"), ("Paris", "place"))
    )
    fact = graph.add_fact(agent_id, ann, "lives in", london, author="extractor")
    graph.edit_fact(fact, relation="lived in")
    correction = services.memory.core.history.for_agent(agent_id, limit=1)[0]
    clock.advance(days=1)
    graph.add_fact(agent_id, ann, "lived in", paris, author="extractor")  # the extractor closes the corrected fact
    history = window.history
    history.refresh()
    settled(qtbot, window)
    history.select_change(correction.id)
    click(qtbot, history.revert_button)
    dialog = history.revert_dialog
    assert dialog.revert_button.text() == "Revert anyway" and "overwrite" in dialog.explanation.text()
    click(qtbot, dialog.cancel_button)
    assert graph.fact(fact).relation == "lived in"  # nothing overwritten


def test_after_the_window_closes_nothing_reads_the_closed_store(make_window, qtbot, services):
    """A real-window run failed with "Cannot operate on a closed database": the block editors'
    age timer and slots the worker had queued ran after the store was closed."""
    window = make_window(ScriptedRuntime(context_window=32768))
    reported = []
    window.hub.shown.connect(reported.append)
    emitter = threading.Thread(
        target=lambda: window.worker.memory_changed.emit(["human"])
    )  # as the worker thread does: queued
    emitter.start()
    emitter.join()
    window.close()
    assert not window.memory.age_timer.isActive() and not window.live_text.timer.isActive()
    services.close()
    QApplication.processEvents()
    assert reported == []


def test_an_undo_over_the_extractors_later_change_points_to_the_history(make_window, qtbot, services, clock):
    window = make_window(ScriptedRuntime(context_window=32768))
    agent_id = window.state.agent_id
    graph = services.memory.graph
    ann, london, paris = (
        graph.resolve(agent_id, n, k) for n, k in (("Ann", "person"), ("London", "place"), ("Paris", "place"))
    )
    fact = graph.add_fact(agent_id, ann, "lives in", london, author="extractor")
    panel = window.knowledge
    panel.refresh()
    panel.select_entity(ann)
    settled(qtbot, window)
    panel.fact_table.selectRow(0)
    assert panel.edits.edit_relation("lived in")
    clock.advance(days=1)
    graph.add_fact(agent_id, ann, "lived in", paris, author="extractor")  # closes the fact the user corrected
    errors = []
    panel.failed.connect(errors.append)
    panel.edits.undo()
    assert graph.fact(fact).relation == "lived in"  # not overwritten
    assert "Ctrl+H" in errors[0].hint and "Cannot undo" in errors[0].user_message
