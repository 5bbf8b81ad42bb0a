"""The chat panel driven as a user would: typing, Enter/Shift+Enter, streaming, stop, search,
history restored on start and on agent switch."""

from __future__ import annotations

import threading
import time

import pytest
from PySide6.QtCore import Qt

from memdesk.core.base.errors import ModelError, StoreBusyError
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.storage import open_database
from tests.runtime.child_runtimes import SlowWarmRuntime


def test_conversation_updates_every_panel_and_survives_restart(make_window, roomy_runtime, send, services):
    roomy_runtime.enqueue(
        call("core_memory_append", "save the name", heartbeat=True, label="human", content="Name: Ada"),
        say("Nice to meet you, **Ada**!", "greet"),
    )
    window = make_window(roomy_runtime)
    send(window, "Hi, I am Ada")
    text = window.chat.transcript.toPlainText()
    assert "Hi, I am Ada" in text and "Nice to meet you, Ada!" in text  # Markdown rendered, not raw
    assert "core_memory_append" not in text  # inner workings collapsed by default
    window.chat.details.setChecked(True)
    detailed = window.chat.transcript.toPlainText()
    assert "core_memory_append" in detailed and "save the name" in detailed
    assert "Name: Ada" in window.memory.editors["human"].editor.toPlainText()
    names = [window.budget.table.item(r, 0).text() for r in range(window.budget.table.rowCount())]
    assert names[:6] == ["system", "tools", "core_memory", "knowledge", "summary", "messages"]
    assert window.chat.compose.toPlainText() == ""
    window.close()

    again = make_window(ScriptedRuntime(context_window=32768))
    assert "Nice to meet you, Ada!" in again.chat.transcript.toPlainText()
    assert services.settings.last_agent == again.services.agents.get(again.state.agent_id).name


def test_shift_enter_adds_a_line_and_enter_sends(make_window, roomy_runtime, qtbot):
    roomy_runtime.enqueue(say("ok"))
    window = make_window(roomy_runtime)
    qtbot.keyClicks(window.chat.compose, "line one")
    qtbot.keyClick(window.chat.compose, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(window.chat.compose, "line two")
    assert window.chat.compose.toPlainText() == "line one\nline two"
    with qtbot.waitSignal(window.turn_done, timeout=10_000):
        qtbot.keyClick(window.chat.compose, Qt.Key.Key_Return)
    assert window.chat.compose.toPlainText() == ""


class SlowRuntime(ScriptedRuntime):
    """Streams its scripted answers slowly, like a real model, so a test can stop mid-stream."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.streaming = threading.Event()

    def generate_call(self, request, *, on_event=None, cancel=None):
        def slow(event):
            self.streaming.set()
            time.sleep(0.02)
            if on_event is not None:
                on_event(event)

        return super().generate_call(request, on_event=slow, cancel=cancel)


def test_escape_stops_mid_stream(make_window, qtbot):
    runtime = SlowRuntime(context_window=32768)
    runtime.enqueue(say("word " * 400))
    window = make_window(runtime)
    qtbot.keyClicks(window.chat.compose, "tell me a long story")
    qtbot.keyClick(window.chat.compose, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "typing" in window.chat.transcript.toPlainText(), timeout=10_000)
    assert window.chat.stop_button.isEnabled()
    assert window.budget.generating_tokens > 0  # the streamed estimate shows in the budget
    with qtbot.waitSignal(window.turn_done, timeout=5_000):
        qtbot.keyClick(window.chat.compose, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not window.state.busy, timeout=30_000)
    assert "you stopped the reply" in window.chat.transcript.toPlainText()
    assert "typing" not in window.chat.transcript.toPlainText()
    assert window.chat.send_button.isEnabled()


def test_ctrl_f_searches_the_whole_history(make_window, roomy_runtime, send, qtbot, monkeypatch):
    embedded_on = set()
    embed = HashingEmbedder.embed

    def recording(self, texts):
        embedded_on.add(threading.current_thread())
        return embed(self, texts)

    monkeypatch.setattr(HashingEmbedder, "embed", recording)
    roomy_runtime.enqueue(say("Tulips bloom in spring."), say("Sure."))
    window = make_window(roomy_runtime)
    send(window, "When do tulips bloom?")
    send(window, "Thanks")
    embedded_on.clear()
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert window.chat.search_bar.isVisible()
    qtbot.keyClicks(window.chat.search_box, "TULIPS")
    qtbot.keyClick(window.chat.search_box, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.chat.search_results.item(0).text().startswith("2 messages match"), timeout=10_000)
    assert [kind for kind, _ in window.archival.hits] == ["conversation", "conversation"]
    # Embedding the messages that had no vector yet happened off the GUI thread.
    assert embedded_on and threading.main_thread() not in embedded_on
    qtbot.keyClick(window.chat.search_box, Qt.Key.Key_Escape)
    assert not window.chat.search_bar.isVisible()


def test_model_errors_reach_the_message_bar(make_window, roomy_runtime, send):
    window = make_window(roomy_runtime)  # nothing queued: the runtime fails
    send(window, "hello?")
    expected = ModelError("scripted runtime: no answer queued").user_message
    assert window.hub.messages == [expected]
    assert window.message_bar.isVisible() and window.message_bar.label.text() == expected


def test_send_works_while_the_model_loads_and_the_message_is_answered_once_it_has(make_window, qtbot, services):
    gate = threading.Event()
    runtime = ScriptedRuntime(context_window=32768)
    runtime.enqueue(say("Hello Ada, I was still waking up."))

    def slow_factory(_settings):
        gate.wait(10)
        return runtime

    window = make_window(runtime, start=False, make_runtime=slow_factory)
    window.start()
    qtbot.waitUntil(lambda: "loading the model" in window.chat.status.text(), timeout=30_000)
    assert window.isVisible() and window.chat.send_button.isEnabled()  # ready at once
    qtbot.keyClicks(window.chat.compose, "Hi, I am Ada")
    qtbot.keyClick(window.chat.compose, Qt.Key.Key_Return)
    # Saved the moment it was sent, and the transcript says when it will be answered.
    assert [m.search_text for m in services.memory.recall.all(window.state.agent_id) if m.kind == "user_message"] == [
        "Hi, I am Ada"
    ]
    assert "will be answered when the model has loaded" in window.chat.transcript.toPlainText()
    assert not window.chat.send_button.isEnabled()  # one message at a time, as during any turn
    with qtbot.waitSignal(window.turn_done, timeout=10_000):
        gate.set()
    assert "Hello Ada, I was still waking up." in window.chat.transcript.toPlainText()
    qtbot.waitUntil(window.chat.send_button.isEnabled, timeout=30_000)
    replies = [m for m in services.memory.recall.all(window.state.agent_id) if m.kind == "assistant_call"]
    assert len(replies) == 1 and runtime.pending == 0  # answered once


def test_the_window_warms_the_model_and_a_message_does_not_wait_for_it(make_window, send, qtbot):
    runtime = SlowWarmRuntime(context_window=32768)  # its warm-up would take a minute
    runtime.enqueue(say("Hello, Ada!"))
    window = make_window(runtime)
    assert runtime.warm_started.wait(10)  # started on its own once the agent was open
    assert [m.role for m in runtime.warmed[0]] == ["system"] and runtime.warmed[0] == window.worker.session.query(
        lambda agent: agent.static_prefix()
    )
    send(window, "Hi, I am Ada.")  # within 15 s, so it did not wait behind the warm-up
    assert runtime.warm_outcomes[0] == "cancelled"
    assert "Hello, Ada!" in window.chat.transcript.toPlainText()


def test_a_message_preempts_a_background_heartbeat(make_window, qtbot, services):
    runtime = SlowRuntime(context_window=32768)
    runtime.enqueue(say("thinking aloud " * 300), say("Hi Ada!"))
    window = make_window(runtime)
    window.worker.heartbeat()  # as the idle timer does
    qtbot.waitUntil(lambda: window.state.background and runtime.streaming.is_set(), timeout=10_000)
    # A background turn does not lock the chat: the user can send at once.
    assert window.chat.send_button.isEnabled() and not window.state.busy
    qtbot.keyClicks(window.chat.compose, "I am Ada")
    qtbot.keyClick(window.chat.compose, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "Hi Ada!" in window.chat.transcript.toPlainText(), timeout=30_000)
    # The heartbeat's 300-word answer never finished: it left no call in the store (below), so the
    # reply did not wait for it. Shown by what was saved, not by a time this machine may not meet.
    qtbot.waitUntil(lambda: not window.state.busy and not window.state.background, timeout=30_000)
    kinds = [m.kind for m in services.memory.recall.all(window.state.agent_id)]
    assert kinds == ["heartbeat", "user_message", "assistant_call", "function_result"]
    assert "thinking aloud" not in window.chat.transcript.toPlainText()


@pytest.mark.parametrize("background", ["login", "heartbeat"])
def test_a_sent_message_is_saved_before_the_background_turn_lets_go(make_window, qtbot, services, background):
    """Send commits the message at once, through the window's own connection, while a background
    turn still holds the model (a prompt batch, a tool): a crash then must not lose it (issue 18)."""
    started, release = threading.Event(), threading.Event()

    def blocked(_messages):
        started.set()
        release.wait(30)
        return say("Welcome back!")

    runtime = ScriptedRuntime([blocked, say("Hi Ada!")], context_window=32768)
    window = make_window(runtime, login=background == "login")
    try:
        if background == "heartbeat":
            window.worker.heartbeat()  # as the idle timer does
        qtbot.waitUntil(lambda: window.state.background and started.is_set(), timeout=10_000)
        qtbot.keyClicks(window.chat.compose, "I am Ada")
        qtbot.keyClick(window.chat.compose, Qt.Key.Key_Return)
        # The background turn is still blocked in its generation, neither cancelled nor joined yet.
        assert not release.is_set() and window.state.background
        assert committed_messages(services, window.state.agent_id) == [(background, ""), ("user_message", "I am Ada")]
    finally:
        release.set()
    qtbot.waitUntil(lambda: "Hi Ada!" in window.chat.transcript.toPlainText(), timeout=10_000)
    qtbot.waitUntil(lambda: not window.state.busy and not window.state.background, timeout=30_000)
    # The worker answered the saved message, once; the background turn's unfinished step left nothing.
    assert [kind for kind, _ in committed_messages(services, window.state.agent_id)] == [
        background,
        "user_message",
        "assistant_call",
        "function_result",
    ]
    assert window.chat.transcript.toPlainText().count("I am Ada") == 1


def test_a_message_the_store_cannot_save_is_not_sent_and_stays_in_the_compose_box(
    make_window, roomy_runtime, qtbot, monkeypatch
):
    window = make_window(roomy_runtime)

    def locked(*args, **kwargs):
        raise StoreBusyError("The database is locked by another program", hint="wait a moment")

    monkeypatch.setattr(window.services.memory.recall, "add", locked)
    qtbot.keyClicks(window.chat.compose, "I am Ada")
    qtbot.keyClick(window.chat.compose, Qt.Key.Key_Return)
    assert window.hub.messages == [
        StoreBusyError("The database is locked by another program", hint="wait a moment").user_message
    ]
    assert window.chat.compose.toPlainText() == "I am Ada" and not window.state.busy
    assert window.chat.send_button.isEnabled()


def committed_messages(services, agent_id: int) -> list[tuple[str, str]]:
    """What another connection sees: only what is committed (what a kill -9 would leave)."""
    other = open_database(services.paths.database)
    try:
        return [
            (r[0], r[1])
            for r in other.query("SELECT kind, search_text FROM messages WHERE agent_id = ? ORDER BY id", (agent_id,))
        ]
    finally:
        other.close()


def test_opening_an_agent_after_a_gap_sends_a_login_in_the_background(make_window, roomy_runtime, qtbot, services):
    roomy_runtime.enqueue(say("Welcome back!"))
    window = make_window(roomy_runtime, login=True)
    qtbot.waitUntil(lambda: "Welcome back!" in window.chat.transcript.toPlainText(), timeout=10_000)
    qtbot.waitUntil(lambda: not window.state.background, timeout=30_000)
    assert [m.kind for m in services.memory.recall.all(window.state.agent_id)][0] == "login"
    assert not window.state.busy
