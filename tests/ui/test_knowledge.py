"""The Knowledge panel as a user drives it: the graph fills in after a turn, facts jump to their
source, and edit, merge, split and delete are each undone with Ctrl+Z (in the app, as a recorded
revert in the memory history); the drawing of an entity's facts stays readable in the default
layout on a 1366×768 screen."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSize, Qt

from memdesk.core.graph.extraction import ExtractionOptions, GraphExtractor
from memdesk.core.memory.revert import Reverter
from memdesk.core.runtime.scripted import ScriptedRuntime, say
from memdesk.ui.common.text import literal
from memdesk.ui.panels.knowledge import FACT_COLUMNS, KnowledgePanel
from memdesk.ui.window import layout as qt_layout
from memdesk.ui.workers.reads import Reads


@pytest.fixture(scope="module")
def analyser():
    from memdesk.core.graph.nlp import SpacyAnalyser

    return SpacyAnalyser()


@pytest.fixture
def filled(services, clock, analyser):
    """An agent whose conversation has been extracted: Ann (alias Annie), Paris, London, Bob."""
    agent_id = services.create_agent("kim").id
    for text in ("My sister Ann lives in London.", "Annie moved to Paris.", "Bob works at Siemens."):
        clock.advance(days=1)
        with services.db.transaction():
            services.memory.recall.add(
                agent_id, role="user", kind="user_message", content=text, search_text=text, created_at=clock.now()
            )
    extractor = GraphExtractor(services.memory.graph, analyser, clock, ExtractionOptions(model_facts=False))
    extractor.enqueue(agent_id)
    extractor.run_entities(agent_id)
    services.memory.graph.merge(
        services.memory.graph.find(agent_id, "Annie").id, services.memory.graph.find(agent_id, "Ann").id
    )
    return agent_id


@pytest.fixture(params=["recorded", "in memory"])
def panel(request, qtbot, services, filled):
    """The app's panel undoes through the memory history (a recorded revert); a bare graph's
    panel keeps its undo stack in memory. Both must behave the same for the user."""
    m = services.memory
    reverter = Reverter(m.core.history, m.core, m.archival, m.graph) if request.param == "recorded" else None
    widget = KnowledgePanel(services.memory.graph, Reads(), reverter=reverter)
    widget.reads.setParent(widget)
    qtbot.addWidget(widget)
    with qtbot.waitSignal(widget.loaded):
        widget.set_agent(filled)
    widget.resize(700, 800)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def names(panel) -> list[str]:
    return [panel.entity_table.item(r, 0).text() for r in range(panel.entity_table.rowCount())]


def settled(qtbot, panel) -> None:
    """What the panel asked to read (off the GUI thread) is shown."""
    qtbot.waitUntil(lambda: not panel.reads.busy, timeout=10_000)


def click_entity(qtbot, panel, name: str) -> None:
    settled(qtbot, panel)
    row = next(r for r, text in enumerate(names(panel)) if text.split("  (")[0] == name)
    rect = panel.entity_table.visualItemRect(panel.entity_table.item(row, 0))
    qtbot.mouseClick(panel.entity_table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    settled(qtbot, panel)
    assert panel.current is not None and panel.current.name == name


def undo(qtbot, panel) -> None:
    qtbot.keyClick(panel.entity_table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    settled(qtbot, panel)


def edit(qtbot, panel, name: str, *args) -> bool:
    """One of the panel's edits, as its buttons and dialogs make it; then what it shows is read again."""
    done = getattr(panel.edits, name)(*args)
    settled(qtbot, panel)
    return done


def test_entities_are_listed_with_counts_and_filtered(qtbot, panel):
    assert "Ann  (Annie)" in names(panel)
    row = names(panel).index("Ann  (Annie)")
    assert panel.entity_table.item(row, 2).text() == "2"  # mentions, aliases included
    qtbot.keyClicks(panel.filter_box, "pari")
    settled(qtbot, panel)
    assert names(panel) == ["Paris"]
    panel.filter_box.clear()
    settled(qtbot, panel)
    assert len(names(panel)) > 3


def test_an_entitys_facts_show_dates_authors_and_history(qtbot, panel):
    click_entity(qtbot, panel, "Ann")
    rows = {
        (panel.fact_table.item(r, 1).text(), panel.fact_table.item(r, 2).text(), panel.fact_table.item(r, 4).text())
        for r in range(panel.fact_table.rowCount())
    }
    assert ("move to", "Paris", "now") in rows
    assert any(rel == "live in" and obj == "London" and to != "now" for rel, obj, to in rows)  # closed, kept
    assert panel.view.nodes and len(panel.view.nodes) >= 3  # Ann, Paris, London (and the user)


def test_rename_is_undone_with_ctrl_z(qtbot, panel, services, filled):
    click_entity(qtbot, panel, "Bob")
    assert edit(qtbot, panel, "rename_entity", "Robert")
    assert "Robert" in names(panel) and "Bob" not in names(panel)
    undo(qtbot, panel)
    assert "Bob" in names(panel) and "Robert" not in names(panel)
    assert services.memory.graph.find(filled, "Bob").author == "extractor"


def test_merge_and_its_undo(qtbot, panel, services, filled):
    click_entity(qtbot, panel, "Bob")
    assert edit(qtbot, panel, "merge_into", "Ann")
    assert "Bob" not in names(panel) and panel.current.name == "Ann"
    assert "Bob" in panel.current.aliases
    undo(qtbot, panel)
    assert "Bob" in names(panel)
    assert services.memory.graph.find(filled, "Bob").aliases == ()


def test_split_an_alias_off_and_undo(qtbot, panel, services, filled):
    click_entity(qtbot, panel, "Ann")
    assert panel.split_button.isEnabled()
    assert edit(qtbot, panel, "split_alias", "Annie")
    assert "Annie" in names(panel) and "Ann" in names(panel)
    paris = [
        f for f in services.memory.graph.facts(services.memory.graph.find(filled, "Annie").id) if f.object == "Paris"
    ]
    assert paris  # the fact written against "Annie" went with it
    undo(qtbot, panel)
    assert "Ann  (Annie)" in names(panel)


def test_delete_entity_and_fact_are_undoable(qtbot, panel, services, filled):
    click_entity(qtbot, panel, "Paris")
    assert edit(qtbot, panel, "delete_entity")
    assert "Paris" not in names(panel) and "Ctrl+Z" in panel.status.text()
    undo(qtbot, panel)
    assert "Paris" in names(panel)
    click_entity(qtbot, panel, "Ann")
    count = panel.fact_table.rowCount()
    panel.fact_table.selectRow(0)
    assert edit(qtbot, panel, "delete_fact") and panel.fact_table.rowCount() == count - 1
    undo(qtbot, panel)
    assert panel.fact_table.rowCount() == count


def test_user_facts_and_ending_a_fact(qtbot, panel, services, filled):
    click_entity(qtbot, panel, "Bob")
    assert edit(qtbot, panel, "add_fact", "likes", "chess")
    row = next(r for r in range(panel.fact_table.rowCount()) if panel.fact_table.item(r, 2).text() == "chess")
    assert panel.fact_table.item(row, 5).text() == "user"
    panel.fact_table.selectRow(row)
    assert edit(qtbot, panel, "end_fact")
    row = next(r for r in range(panel.fact_table.rowCount()) if panel.fact_table.item(r, 2).text() == "chess")
    assert panel.fact_table.item(row, 4).text() != "now"
    undo(qtbot, panel)
    undo(qtbot, panel)
    assert services.memory.graph.find(filled, "chess") is None


def test_clicking_a_neighbour_in_the_graph_view_selects_it(qtbot, panel):
    click_entity(qtbot, panel, "Bob")
    siemens = next(node for node, item in panel.view.nodes.items() if item.toolTip() == literal("Siemens"))
    point = panel.view.mapFromScene(panel.view.nodes[siemens].sceneBoundingRect().center())
    qtbot.mouseClick(panel.view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    settled(qtbot, panel)
    assert panel.current.name == "Siemens"


def test_a_source_link_asks_for_its_message(qtbot, panel):
    click_entity(qtbot, panel, "Bob")
    column = FACT_COLUMNS.index("Source")
    assert panel.fact_table.item(0, column).text().startswith("message of")
    with qtbot.waitSignal(panel.source_requested) as signal:
        rect = panel.fact_table.visualItemRect(panel.fact_table.item(0, column))
        qtbot.mouseClick(panel.fact_table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert signal.args[0] == "message"


def test_after_a_turn_the_graph_fills_in_and_a_fact_jumps_to_its_message(
    make_window, send, qtbot, services, wait_for_signal, settle
):
    runtime = ScriptedRuntime(context_window=32768)
    runtime.enqueue(say("Noted!"), say("Good to know."))
    window = make_window(runtime)
    window.docks["Knowledge"].raise_()
    with wait_for_signal(window.worker.graph.changed, timeout=60_000):
        send(window, "My brother Tom lives in Lisbon.")
    send(window, "The weather is nice today.")  # pushes the first message up the transcript
    panel = window.knowledge
    qtbot.waitUntil(lambda: any(n.startswith("Tom") for n in names(panel)), timeout=10_000)
    click_entity(qtbot, panel, "Tom")
    row = next(r for r in range(panel.fact_table.rowCount()) if panel.fact_table.item(r, 2).text() == "Lisbon")
    panel.fact_table.cellActivated.emit(row, 0)  # Enter or double-click on the fact
    settle(window)  # the message is read off the GUI thread
    source = next(
        m
        for m in services.memory.recall.all(window.state.agent_id)
        if m.search_text == "My brother Tom lives in Lisbon."
    )
    assert window.chat.transcript.highlighted_message == source.id  # scrolled to and highlighted
    budget = window.budget
    qtbot.waitUntil(
        lambda: any(budget.table.item(r, 0).text() == "knowledge" for r in range(budget.table.rowCount())),
        timeout=10_000,
    )


def test_a_fact_from_a_document_jumps_to_its_passage(make_window, qtbot, services, wait_for_signal, settle):
    window = make_window(ScriptedRuntime(context_window=32768))
    agent_id = window.state.agent_id
    services.memory.archival.insert(agent_id, "Marie Curie worked in Paris. She discovered polonium.")
    with wait_for_signal(window.worker.graph.changed, timeout=60_000):
        window.worker.graph.extract(agent_id)
    panel = window.knowledge
    qtbot.waitUntil(lambda: "Marie Curie" in names(panel), timeout=10_000)
    click_entity(qtbot, panel, "Marie Curie")
    assert panel.fact_table.rowCount() >= 1
    panel.open_source(0)
    settle(window)  # the passage is read off the GUI thread
    assert window.archival.hits and window.archival.hits[0][1].passage.text.startswith("Marie Curie")
    assert "Marie Curie worked in Paris" in window.archival.detail.toPlainText()


def test_with_extraction_off_in_settings_nothing_is_extracted(make_window, send, qtbot, services):
    services.settings_store.set("graph_extraction", False)
    runtime = ScriptedRuntime(context_window=32768)
    runtime.enqueue(say("Noted!"))
    window = make_window(runtime)
    send(window, "My brother Tom lives in Lisbon.")
    window.worker.graph.extract(window.state.agent_id)  # what the graph thread does after the turn,
    assert window.worker.session.graph.wait_until_idle(60)  # done here to wait for it
    assert services.memory.graph.entities(window.state.agent_id) == []
    assert services.db.scalar("SELECT COUNT(*) FROM graph_queue") == 0
    rows = {
        window.budget.table.item(r, 0).text(): window.budget.table.item(r, 1).text()
        for r in range(window.budget.table.rowCount())
    }
    assert rows["knowledge"] == "0"


# --- the drawing of an entity's facts at the default layout on a 1366×768 screen (issue 22) ---

LONG_RELATION = "used to work with every Tuesday morning"


def test_relations_in_the_drawing_are_whole_and_clear_of_the_nodes_at_the_default_layout(
    make_window, roomy_runtime, qtbot, services
):
    window = make_window(roomy_runtime)
    qt_layout.apply_default(window, window.docks, QSize(1366, 768))
    window.docks["Knowledge"].raise_()
    graph, agent = services.memory.graph, window.state.agent_id
    for subject, relation, obj in (
        ("Ann", "moved to", "Porto"),
        ("Ann", "sister of", "Ada"),
        ("Ann", "teaches", "music"),
        ("Bob", "friend of", "Ann"),
        ("Ann", LONG_RELATION, "Siemens Healthineers"),
    ):
        graph.insert_fact(agent, subject, relation, obj, author="user")
    panel = window.knowledge
    panel.refresh()
    click_entity(qtbot, panel, "Ann")
    qtbot.wait(50)  # the layout settles
    view = panel.view
    shown = {label.text(): label for label in view.labels}
    assert {"moved to", "sister of", "teaches", "friend of"} <= set(shown)  # whole, not "sister o"
    long = next(label for label in view.labels if label.text().endswith("…"))
    stored = next(f.relation for f in panel.facts if f.object == "Siemens Healthineers")
    assert f"Ann {stored} Siemens Healthineers" in long.toolTip()  # the whole sentence on hover
    viewport = view.viewport().rect()
    for label in view.labels:
        rect = view.mapFromScene(label.sceneBoundingRect()).boundingRect()
        assert viewport.contains(rect), (label.text(), rect, viewport)  # in sight, not cut at the view's edge
        crossing = [
            item
            for item in view.scene().items()
            if item is not label and item.sceneBoundingRect().intersects(label.sceneBoundingRect())
        ]
        assert crossing == [], label.text()  # no node, name, line or other relation over it


def test_a_name_set_in_settings_renames_the_user_in_the_panel_at_once(make_window, roomy_runtime, qtbot, services):
    window = make_window(roomy_runtime)
    graph, agent = services.memory.graph, window.state.agent_id
    services.memory.archival.insert(agent, "My sister Ann moved to Porto.")  # a note of the user's: no turn follows it
    window.worker.graph.extract(agent)
    qtbot.waitUntil(lambda: "User" in names(window.knowledge), timeout=60_000)
    window.window_settings.apply({"user_name": "Ada"})  # File > Settings…, OK: no message needed
    qtbot.waitUntil(lambda: "Ada  (User)" in names(window.knowledge), timeout=60_000)
    assert graph.find(agent, "User").name == "Ada"
    row = names(window.knowledge).index("Ada  (User)")
    assert window.knowledge.entity_table.item(row, 1).text() == "you"  # the kind, in the user's words
