"""The first window: Send works within half a second of the launch, before the store, the agent and
the model are ready. What is sent there is on disk the moment it is sent, the main window takes the
first one's place (and the draft in its box), saves the message to the agent and answers it; a start
that ends before that leaves the message for the next start, which answers it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from memdesk.app import runtimes as app_runtimes
from memdesk.app.instance import WINDOW, InstanceLock
from memdesk.app.local_model import settings_before_opening
from memdesk.core.agent import unanswered
from memdesk.core.base.paths import Paths
from memdesk.core.runtime.scripted import ScriptedRuntime, say
from memdesk.session.sent_before_open import SentBeforeOpen
from memdesk.ui.startup import main as window_main
from memdesk.ui.startup.first_window import open_first_window


@pytest.fixture
def paths(plain_store):
    return Paths.from_environment()


@pytest.fixture
def answering(monkeypatch):
    """The window's model answers once; ``drive``, handed the main window (``run``'s ``on_window``),
    records what the window shows when a turn ends, then closes it."""
    runtime = ScriptedRuntime([say("Hello Ada, good to meet you.")], context_window=32768)
    monkeypatch.setattr(app_runtimes, "make_runtime", lambda _settings, **_key: runtime)
    seen = Seen()

    def drive(window) -> None:
        def done() -> None:
            if window.state.last_sent_id is None or "transcript" in seen:
                return
            recall = window.services.memory.recall
            reply = unanswered.reply_to(window.services.db, recall, window.state.agent_id, window.state.last_sent_id)
            if reply is None:
                return  # another turn ended (one the message preempted): its own is still to come
            seen.update(
                transcript=window.chat.transcript.toPlainText(),
                draft=window.chat.compose.toPlainText(),
                users=[m.search_text for m in recall.all(window.state.agent_id) if m.kind == "user_message"],
                reply=reply,
            )
            window.close()

        window.turn_done.connect(done)

    seen.drive = drive
    return seen


class Seen(dict):
    """What the window showed when its turn ended, and the driver that saw it (``drive``)."""

    drive = None


def run_main_window(tmp_path, first=None, driven: Seen | None = None) -> int:
    """The main window, driven (no welcome: nobody's first start) by ``driven``'s driver, or by none."""
    return window_main.run([], first=first, on_window=driven.drive if driven is not None else lambda _window: None)


def test_a_message_sent_in_the_first_window_is_on_disk_at_once_and_the_main_window_answers_it(
    qtbot, paths, window_start, answering, rescue, tmp_path
):
    first = open_first_window(paths, settings_before_opening(paths))
    assert first is not None and first.isVisible() and first.send_button.isEnabled()
    qtbot.keyClicks(first.compose, "Hi, I am Ada")
    qtbot.keyClick(first.compose, Qt.Key.Key_Return)
    assert SentBeforeOpen(paths.sent_before_open).texts() == ["Hi, I am Ada"]  # the moment it was sent
    assert "will be answered when the model has loaded" in first.transcript.toPlainText()
    assert not first.send_button.isEnabled()  # one message at a time, as during any turn
    qtbot.keyClicks(first.compose, "and a second thought")

    assert run_main_window(tmp_path, first, answering) == 0 and rescue == []
    assert not first.isVisible()  # the main window took its place
    assert answering["users"] == ["Hi, I am Ada"]  # saved once, to the agent
    assert answering["reply"] is not None and answering["reply"].search_text == "Hello Ada, good to meet you."
    assert "Hi, I am Ada" in answering["transcript"] and "Hello Ada, good to meet you." in answering["transcript"]
    assert answering["draft"] == "and a second thought"  # the unsent draft moved with it
    assert not paths.sent_before_open.exists()  # in the store now, so not on disk twice


def test_a_message_a_start_left_on_disk_is_answered_by_the_next_start(
    qtbot, paths, window_start, answering, rescue, tmp_path
):
    SentBeforeOpen(paths.sent_before_open).add("Are you there?")  # a start that ended before saving it

    assert run_main_window(tmp_path, driven=answering) == 0 and rescue == []
    assert answering["users"] == ["Are you there?"]
    assert answering["reply"] is not None
    assert not paths.sent_before_open.exists()


def test_closing_the_first_window_ends_the_start_and_keeps_what_was_sent(qtbot, paths, window_start, rescue, tmp_path):
    first = open_first_window(paths, settings_before_opening(paths))
    qtbot.keyClicks(first.compose, "Remember my garden")
    qtbot.keyClick(first.compose, Qt.Key.Key_Return)
    first.close()
    assert first.dismissed
    assert run_main_window(tmp_path, first) == 0 and rescue == []
    assert SentBeforeOpen(paths.sent_before_open).texts() == ["Remember my garden"]  # for the next start
    InstanceLock(paths.instance_lock, WINDOW).acquire().release()  # and the data folder is free


def test_no_first_window_while_another_memdesk_holds_the_data_folder(qtbot, paths):
    holder = InstanceLock(paths.instance_lock, WINDOW).acquire()
    try:
        assert open_first_window(paths, settings_before_opening(paths)) is None  # the main start says who holds it
    finally:
        holder.release()


def test_no_first_window_before_an_encrypted_or_damaged_store_is_opened(qtbot, paths):
    # settings_before_opening cannot read those (None): the passphrase or the snapshot offer comes first.
    assert open_first_window(paths, None) is None


def test_a_line_a_crash_cut_short_is_skipped_and_the_others_kept(tmp_path):
    inbox = SentBeforeOpen(tmp_path / "sent.jsonl")
    inbox.add("first")
    inbox.add("zweite Nachricht, ação")
    with open(inbox.path, "a", encoding="utf-8") as handle:
        handle.write('{"text": "cut sh')
    assert inbox.texts() == ["first", "zweite Nachricht, ação"]
    inbox.clear()
    assert inbox.texts() == []
