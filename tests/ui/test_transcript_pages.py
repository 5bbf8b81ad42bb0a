"""A long conversation opens at once (issue 20): the window shows the newest page of messages and
loads older ones as the user scrolls up (or clicks "Show earlier messages"); a message a memory
change or a search points at is shown however old it is."""

from __future__ import annotations

import json
from datetime import timedelta

from PySide6.QtCore import Qt, QUrl

from memdesk.core.runtime.scripted import ScriptedRuntime
from memdesk.ui.panels.transcript import CONTEXT_DIVIDER, EARLIER_TEXT

PAGE = 10


def converse(services, pairs: int) -> int:
    """An agent with ``pairs`` questions and answers stored (the last one answered); its id."""
    agent = services.create_agent("Companion")
    services.settings_store.set("last_agent", agent.name)
    at = services.clock.now() - timedelta(days=1)
    for n in range(pairs):
        services.memory.recall.add(
            agent.id,
            role="user",
            kind="user_message",
            content=f"question {n}",
            search_text=f"question {n}",
            created_at=at + timedelta(minutes=2 * n),
        )
        reply = json.dumps({"function": "send_message", "params": {"inner_thoughts": "", "message": f"answer {n}"}})
        services.memory.recall.add(
            agent.id,
            role="assistant",
            kind="assistant_call",
            content=reply,
            search_text=f"answer {n}",
            function_name="send_message",
            created_at=at + timedelta(minutes=2 * n + 1),
        )
    return agent.id


def paged_window(make_window, services, settle, pairs: int):
    converse(services, pairs)
    return opened(make_window, settle)


def opened(make_window, settle):
    """The window opened with pages of PAGE messages, once it shows the conversation."""
    window = make_window(ScriptedRuntime(context_window=32768), start=False)
    window.pages.page_size = PAGE
    window.start()
    settle(window)  # the page is read off the GUI thread
    return window


def shown(window) -> str:
    return window.chat.transcript.toPlainText()


def test_a_long_conversation_opens_with_its_newest_page_and_a_way_to_earlier_messages(
    make_window, qtbot, services, settle
):
    window = paged_window(make_window, services, settle, 40)
    assert len(window.chat.transcript.entries) == PAGE
    assert "answer 39" in shown(window) and "question 35" in shown(window)
    assert "question 34" not in shown(window) and EARLIER_TEXT in shown(window)
    assert window.chat.send_button.isEnabled()


def test_scrolling_to_the_top_loads_the_previous_page_and_keeps_the_place(make_window, qtbot, services, settle):
    window = paged_window(make_window, services, settle, 40)
    window.resize(900, 400)
    transcript = window.chat.transcript
    bar = transcript.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=30_000)
    bar.setValue(bar.maximum())
    bar.setValue(bar.minimum())  # the user scrolls to the top
    settle(window)
    assert len(transcript.entries) == 2 * PAGE and "question 30" in shown(window)
    assert bar.value() > bar.minimum()  # what was at the top stays in view, not the new top
    while transcript.has_earlier:  # to the very beginning
        transcript.anchorClicked.emit(QUrl("earlier:"))
        settle(window)
    assert len(transcript.entries) == 80 and "question 0" in shown(window) and EARLIER_TEXT not in shown(window)


def test_an_old_message_a_memory_change_points_at_is_loaded_and_shown(make_window, qtbot, services, settle):
    window = paged_window(make_window, services, settle, 40)
    old = next(m for m in services.memory.recall.all(window.state.agent_id) if m.search_text == "question 3")
    window.navigation.show_message(old.id)  # the Memory history's "show the message that caused it"
    settle(window)
    assert window.chat.transcript.highlighted_message == old.id
    assert "question 3" in shown(window) and "answer 39" in shown(window)  # everything since, too
    assert not window.message_bar.isVisible()


def test_a_search_hit_older_than_the_page_is_shown_when_chosen(make_window, qtbot, services, settle):
    window = paged_window(make_window, services, settle, 40)
    old = next(m for m in services.memory.recall.all(window.state.agent_id) if m.search_text == "question 7")
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(window.chat.search_box, "question 7")
    qtbot.keyClick(window.chat.search_box, Qt.Key.Key_Return)
    results = window.chat.search_results
    qtbot.waitUntil(
        lambda: any(results.item(r).text().endswith("You: question 7") for r in range(results.count())), timeout=10_000
    )
    hit = next(results.item(r) for r in range(results.count()) if results.item(r).text().endswith("You: question 7"))
    results.itemActivated.emit(hit)  # Enter on the result
    settle(window)
    assert window.chat.transcript.highlighted_message == old.id


def test_the_context_line_is_drawn_where_the_model_s_window_starts_on_a_later_page(
    make_window, qtbot, services, settle
):
    agent_id = converse(services, 40)
    newest = services.memory.recall.newest(agent_id, PAGE)
    services.db.execute("UPDATE agents SET context_start_id = ? WHERE id = ?", (newest[4].id, agent_id))
    window = opened(make_window, settle)
    text = shown(window)
    assert CONTEXT_DIVIDER in text
    assert text.index("question 35") < text.index(CONTEXT_DIVIDER) < text.index(newest[4].search_text)


def test_no_context_line_above_a_page_wholly_inside_the_model_s_window(make_window, qtbot, services, settle):
    agent_id = converse(services, 40)
    services.db.execute(
        "UPDATE agents SET context_start_id = ? WHERE id = ?",
        (services.memory.recall.newest(agent_id, 30)[0].id, agent_id),
    )
    window = opened(make_window, settle)
    assert CONTEXT_DIVIDER not in shown(window)  # the line is among the messages not loaded yet
