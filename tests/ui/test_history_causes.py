"""The memory history says what led to a change in the words the conversation uses for events
(memdesk.core.agent.conversation_view.event_words): a change made on a timed heartbeat is the
agent's own turn, not an answer to the user's last message; one made while it went on after a
step answers the user's message that started the chain."""

from __future__ import annotations

from memdesk.core.agent import events
from memdesk.core.memory.history import AGENT, Cause
from memdesk.core.memory.revert import Reverter
from memdesk.ui.panels.history import HistoryView
from memdesk.ui.workers.reads import Reads


def said_about_a_change_made_on(qtbot, services, reason: str) -> str:
    """The history's details of a change the agent made while answering a heartbeat for ``reason``,
    after the user said "I like green tea"."""
    memory, now = services.memory, services.clock.now()
    agent_id = services.create_agent("kim").id
    said = "I like green tea"
    memory.recall.add(
        agent_id,
        role="user",
        kind="user_message",
        content=events.user_message(said, now),
        search_text=said,
        created_at=now,
    )
    beat = memory.recall.add(
        agent_id, role="user", kind="heartbeat", content=events.heartbeat(reason, now), created_at=now
    )
    memory.core.set_value(agent_id, "human", "Likes green tea", source=AGENT, cause=Cause(message_id=beat.id))
    reads = Reads()
    view = HistoryView(
        memory.core, memory.recall, Reverter(memory.core.history, memory.core, memory.archival), services.clock, reads
    )
    reads.setParent(view)
    qtbot.addWidget(view)
    with qtbot.waitSignal(view.loaded, timeout=10_000):
        view.set_agent(agent_id)
    view.select_change(view.changes[0].id)
    qtbot.waitUntil(lambda: not reads.busy, timeout=10_000)
    return view.details.toPlainText()


def test_a_change_on_a_timed_heartbeat_is_the_agents_own_turn_in_the_conversations_words(qtbot, services):
    text = said_about_a_change_made_on(qtbot, services, events.HEARTBEAT_TIMED)
    assert "On its own turn (it checked in on its own)" in text
    assert "heartbeat" not in text and "Answering your message" not in text


def test_a_change_made_going_on_after_a_step_answers_the_users_message(qtbot, services):
    text = said_about_a_change_made_on(qtbot, services, events.HEARTBEAT_AFTER_CALL)
    assert "Answering your message “I like green tea”" in text and "heartbeat" not in text
