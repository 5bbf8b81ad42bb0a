"""No message left unanswered in the window (issue 22): a turn that ended early (the window closed
mid-reply, the user pressed Stop) leaves the user's message owed; the next open answers it by
itself, a stopped one gets a one-click Retry, and nothing is answered twice."""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt, QUrl

from memdesk.app.services import open_services
from memdesk.core.agent import unanswered
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime, say
from memdesk.ui.window.conversation import NOT_ANSWERED_YET
from memdesk.ui.window.main_window import MainWindow
from tests.ui.test_chat import SlowRuntime


def user_turn_started(window, qtbot, text: str) -> None:
    qtbot.keyClicks(window.chat.compose, text)
    qtbot.keyClick(window.chat.compose, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "typing" in window.chat.transcript.toPlainText(), timeout=10_000)


def replies(services, agent_id: int) -> list[str]:
    return [
        m.search_text
        for m in services.memory.recall.all(agent_id)
        if m.kind == "assistant_call" and m.function_name == "send_message" and m.search_text
    ]


def test_a_message_whose_window_closed_mid_reply_is_answered_on_the_next_open(make_window, qtbot, services):
    slow = SlowRuntime(context_window=32768)
    slow.enqueue(say("word " * 400))
    window = make_window(slow)
    user_turn_started(window, qtbot, "Hi, I am Ada. I live in Lisbon and I love gardening.")
    agent_id = window.state.agent_id
    window.close()  # mid-reply: the turn is cancelled, nothing of the reply is saved
    owed = unanswered.newest(services.db, services.memory.recall, agent_id)
    assert owed is not None and owed.search_text.startswith("Hi, I am Ada")
    assert replies(services, agent_id) == []

    runtime = ScriptedRuntime(context_window=32768)
    runtime.enqueue(say("Welcome, Ada! Lisbon gardens must be lovely."))
    again = make_window(runtime, start=False, login=True)  # the answer goes before any login turn
    with qtbot.waitSignal(again.opened, timeout=10_000):  # the agent, its page and the note are shown
        again.start()
    assert NOT_ANSWERED_YET in again.chat.transcript.toPlainText()
    qtbot.waitUntil(lambda: "Lisbon gardens must be lovely" in again.chat.transcript.toPlainText(), timeout=15_000)
    assert "answering your message of" in again.chat.transcript.toPlainText()
    assert "Hi, I am Ada" in "\n".join(m.content for m in runtime.prompts[0])
    qtbot.waitUntil(lambda: not again.state.busy and not again.state.background, timeout=10_000)
    assert replies(services, agent_id) == ["Welcome, Ada! Lisbon gardens must be lovely."]
    assert unanswered.newest(services.db, services.memory.recall, agent_id) is None
    assert not again.message_bar.isVisible()  # no error: the model was asked once, as scripted


def test_an_answered_conversation_is_not_answered_again_on_open(make_window, send, qtbot, services):
    runtime = ScriptedRuntime(context_window=32768)
    runtime.enqueue(say("Hello Ada"))
    window = make_window(runtime)
    send(window, "Hi, I am Ada")
    window.close()

    runtime = ScriptedRuntime(context_window=32768)
    runtime.enqueue(say("Gardening, of course"))
    again = make_window(runtime)
    assert NOT_ANSWERED_YET not in again.chat.transcript.toPlainText()
    send(again, "What do I love?")
    assert len(runtime.prompts) == 1  # the only turn was the new message's
    assert "What do I love?" in runtime.prompts[0][-1].content


def test_a_message_sent_while_the_model_loads_is_answered_once_though_it_is_also_owed_on_open(
    make_window, qtbot, services, wait_for_signal
):
    """Saved before the agent opens, the message is both queued and found owed: one reply."""
    gate = threading.Event()
    runtime = ScriptedRuntime([say("Hello Ada")], context_window=32768)

    def slow_factory(_settings):
        gate.wait(10)
        return runtime

    window = make_window(runtime, start=False, make_runtime=slow_factory)
    with qtbot.waitSignal(window.opened, timeout=10_000):  # Send works once the agent is shown
        window.start()
    qtbot.keyClicks(window.chat.compose, "Hi, I am Ada")
    qtbot.keyClick(window.chat.compose, Qt.Key.Key_Return)  # the model is still loading
    with qtbot.waitSignal(window.turn_done, timeout=10_000):
        gate.set()
    qtbot.waitUntil(lambda: not window.state.busy and not window.state.background, timeout=10_000)
    with wait_for_signal(window.worker.budget_changed, timeout=10_000):  # the worker's queue is through
        window.worker.refresh_budget()
    assert replies(services, window.state.agent_id) == ["Hello Ada"]
    assert "answering your message of" not in window.chat.transcript.toPlainText()
    assert not window.message_bar.isVisible()  # the model was not asked a second time


def test_a_stopped_reply_offers_a_retry_that_answers_the_message(make_window, qtbot, services, wait_for_signal):
    runtime = SlowRuntime(context_window=32768)
    runtime.enqueue(say("word " * 400))
    window = make_window(runtime)
    user_turn_started(window, qtbot, "Tell me a long story")
    message = unanswered.newest(services.db, services.memory.recall, window.state.agent_id)
    with qtbot.waitSignal(window.turn_done, timeout=10_000):
        qtbot.keyClick(window.chat.compose, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not window.state.busy, timeout=10_000)
    assert "not answered · Retry" in window.chat.transcript.toPlainText()
    assert f'href="retry:{message.id}"' in window.chat.transcript.toHtml()

    runtime.clear()
    runtime.enqueue(say("Once upon a time."))
    # Reopening the agent (a setting changed) does not answer what the user stopped on its own.
    with wait_for_signal(window.worker.agent_opened, timeout=10_000):
        window.window_settings.apply({"temperature": 0.5})
    with wait_for_signal(window.worker.budget_changed, timeout=10_000):  # what the reopen queued has run
        window.worker.refresh_budget()
    assert not window.state.busy and not window.state.background and runtime.pending == 1
    with qtbot.waitSignal(window.turn_done, timeout=10_000):
        window.chat.transcript.anchorClicked.emit(QUrl(f"retry:{message.id}"))  # the link, clicked
    assert "Once upon a time." in window.chat.transcript.toPlainText()
    assert replies(services, window.state.agent_id) == ["Once upon a time."]
    # Clicked again: it has been answered, so nothing runs and the user is told why.
    qtbot.waitUntil(lambda: not window.state.busy, timeout=10_000)
    window.chat.transcript.anchorClicked.emit(QUrl(f"retry:{message.id}"))
    assert "answered since" in window.message_bar.label.text()
    assert replies(services, window.state.agent_id) == ["Once upon a time."]


class _WarmUpWatch(HashingEmbedder):
    """Notes when the worker warms it (the "warm up" text), as the real embedder's load."""

    def __init__(self) -> None:
        super().__init__()
        self.warmed = threading.Event()

    def embed(self, texts):
        if list(texts) == ["warm up"]:
            self.warmed.set()
        return super().embed(texts)


def test_the_embedding_model_warms_after_the_first_reply_not_during_it(services, qtbot):
    """Loading torch took the CPU from the first reply on a small machine: it waits for the turn."""
    embedder = _WarmUpWatch()
    services.settings_store.set("login_after_minutes", 0)
    services.settings_store.set("graph_model_facts", False)
    gate = threading.Event()
    warmed_during_turn: list[bool] = []

    def reply(_messages):
        warmed_during_turn.append(embedder.warmed.is_set())
        return say("Hello Ada")

    runtime = ScriptedRuntime([reply], context_window=32768)

    def slow_factory(_settings):
        gate.wait(10)
        return runtime

    window = MainWindow(
        services,
        open_worker_services=lambda: open_services(Paths.from_environment(), embedder=embedder),
        make_runtime=slow_factory,
        warm_embedder=True,
    )
    try:
        window.show()
        with qtbot.waitSignal(window.opened, timeout=10_000):  # Send works once the agent is shown
            window.start()
        qtbot.keyClicks(window.chat.compose, "Hi, I am Ada")
        qtbot.keyClick(window.chat.compose, Qt.Key.Key_Return)  # while the model loads
        with qtbot.waitSignal(window.turn_done, timeout=10_000):
            gate.set()
        assert warmed_during_turn == [False]
        assert embedder.warmed.wait(10)  # and once the turn is over
    finally:
        window.close()
        window.deleteLater()


def test_a_stopped_reply_is_still_marked_not_answered_after_a_restart_and_retry_answers_it(
    make_window, qtbot, services, wait_for_signal
):
    runtime = SlowRuntime(context_window=32768)
    runtime.enqueue(say("word " * 400))
    window = make_window(runtime)
    user_turn_started(window, qtbot, "Tell me a long story")
    message = unanswered.newest(services.db, services.memory.recall, window.state.agent_id)
    with qtbot.waitSignal(window.turn_done, timeout=10_000):
        window.chat.stop_button.click()
    window.close()

    again_runtime = ScriptedRuntime(context_window=32768)
    again_runtime.enqueue(say("Once upon a time."))
    again = make_window(again_runtime)
    with wait_for_signal(again.worker.budget_changed, timeout=10_000):  # what opening the agent queued has run
        again.worker.refresh_budget()
    text = again.chat.transcript.toPlainText()
    assert "Tell me a long story" in text and "not answered · Retry" in text and NOT_ANSWERED_YET not in text
    assert f'href="retry:{message.id}"' in again.chat.transcript.toHtml()
    assert again_runtime.prompts == [] and not again.state.background  # the user's Stop is not undone
    with qtbot.waitSignal(again.turn_done, timeout=10_000):
        again.chat.transcript.anchorClicked.emit(QUrl(f"retry:{message.id}"))
    assert replies(services, again.state.agent_id) == ["Once upon a time."]


def test_closing_the_window_mid_reply_is_not_recorded_as_a_stop(make_window, qtbot, services):
    slow = SlowRuntime(context_window=32768)
    slow.enqueue(say("word " * 400))
    window = make_window(slow)
    user_turn_started(window, qtbot, "Tell me a long story")
    message = unanswered.newest(services.db, services.memory.recall, window.state.agent_id)
    window.close()
    assert not unanswered.was_stopped(services.db, message.id)


def test_escape_during_the_answer_to_an_owed_message_marks_it_stopped_with_retry(make_window, qtbot, services):
    slow = SlowRuntime(context_window=32768)
    slow.enqueue(say("word " * 400))
    window = make_window(slow)
    user_turn_started(window, qtbot, "Tell me a long story")
    message = unanswered.newest(services.db, services.memory.recall, window.state.agent_id)
    window.close()  # mid-reply: owed, answered on the next open

    again_runtime = SlowRuntime(context_window=32768)
    again_runtime.enqueue(say("word " * 400))
    again = make_window(again_runtime)
    qtbot.waitUntil(lambda: "typing" in again.chat.transcript.toPlainText(), timeout=10_000)  # the owed answer streams
    with qtbot.waitSignal(again.turn_done, timeout=10_000):
        qtbot.keyClick(again.chat.compose, Qt.Key.Key_Escape)
    assert "not answered · Retry" in again.chat.transcript.toPlainText()
    assert unanswered.was_stopped(services.db, message.id)
