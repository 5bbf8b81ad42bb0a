"""The scripted end-to-end run (`python -m testing.scripted_window --screenshot`) used by the Xvfb test,
the socket audit and the benchmarks: it must not hang when the window is not ready for its message yet."""

from __future__ import annotations

from PySide6.QtCore import QTimer

from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from testing.scripted_window import drive
from tests.ui.test_chat import SlowRuntime


def test_the_screenshot_driver_waits_until_the_window_takes_its_message(make_window, roomy_runtime, qtbot, tmp_path):
    """ "Model ready" can come while the worker still opens the agent (Send greyed): the scripted
    run must not drop its message and then wait forever for a reply."""
    roomy_runtime.enqueue(say("Hello Ada"))
    window = make_window(roomy_runtime, start=False)
    shot = tmp_path / "shot.png"
    drive(window, str(shot), "Hi, I am Ada", give_up_after_s=60)

    def looks_busy_for_a_while(_model: str) -> None:  # as while the worker opens the agent
        window.state.busy = True
        QTimer.singleShot(700, window, lambda: setattr(window.state, "busy", False))

    window.model_ready.connect(looks_busy_for_a_while)
    window.start()
    # The driver closes the window right after the shot, inside this wait: closing waits for the
    # knowledge graph's thread, which may still be loading spaCy (12 s alone here, over 20 s on a
    # loaded 2-core machine).
    qtbot.waitUntil(shot.exists, timeout=90_000)
    assert "Hello Ada" in window.chat.transcript.toPlainText()


def test_the_screenshot_driver_denies_a_tool_that_asks_for_consent(
    make_window, roomy_runtime, qtbot, tmp_path, services
):
    """Nobody answers a consent dialog in a scripted run: left open, it held the turn until the run
    gave up (the bundled model sometimes calls append_to_text_file). The driver denies, as a user
    clicking Deny, and the reply still comes."""
    roomy_runtime.enqueue(
        call("append_to_text_file", "note it", filename="notes.txt", content="Ada said hi"),
        say("Hello Ada"),
    )
    window = make_window(roomy_runtime, start=False)
    shot = tmp_path / "shot.png"
    drive(window, str(shot), "Hi, I am Ada", give_up_after_s=60)
    window.start()
    # The driver closes the window right after the shot, inside this wait: closing waits for the
    # knowledge graph's thread, which may still be loading spaCy (12 s alone here, over 20 s on a
    # loaded 2-core machine).
    qtbot.waitUntil(shot.exists, timeout=90_000)
    assert "Hello Ada" in window.chat.transcript.toPlainText()
    assert not (services.paths.agent_files(window.state.agent_id) / "notes.txt").exists()
    results = [
        m
        for m in services.memory.recall.all(window.state.agent_id)
        if m.kind == "function_result" and m.function_name == "append_to_text_file"
    ]
    assert len(results) == 1 and '"status": "Failed"' in results[0].content and "did not allow" in results[0].content
    qtbot.waitUntil(lambda: not window.consent_dialogs, timeout=30_000)


class _Exits:
    """Stands in for QApplication.exit in the driver: records the exit code instead of ending the loop."""

    def __init__(self) -> None:
        self.codes: list[int] = []

    def exit(self, code: int = 0) -> None:
        self.codes.append(code)


def test_the_screenshot_driver_waits_for_the_reply_to_its_message_not_the_preempted_login_turn(
    make_window, qtbot, tmp_path, capsys, monkeypatch, services
):
    """A fresh agent's login turn runs when the message is sent; cancelled for it, that turn ends
    first. The screenshot must wait for the reply and show it."""
    exits = _Exits()
    runtime = SlowRuntime(context_window=32768)
    runtime.enqueue(say("Welcome! " * 300), say("Hello Ada"))  # the login's long answer, then the reply
    window = make_window(runtime, start=False, login=True)
    shot = tmp_path / "shot.png"
    seen_at_grab: list[str] = []
    grab = window.grab
    monkeypatch.setattr(window, "grab", lambda: (seen_at_grab.append(window.chat.transcript.toPlainText()), grab())[1])
    drive(window, str(shot), "Hi, I am Ada", give_up_after_s=60, exit=exits.exit)
    window.start()
    qtbot.waitUntil(shot.exists, timeout=30_000)
    # The login turn was preempted, and ended first: its event is saved, its unfinished answer is not.
    kinds = [m.kind for m in services.memory.recall.all(window.state.agent_id)]
    assert kinds == ["login", "user_message", "assistant_call", "function_result"]
    assert "Hello Ada" in seen_at_grab[0]  # yet the picture shows the reply
    assert "Welcome!" not in seen_at_grab[0] and "preempted" not in seen_at_grab[0]  # nothing internal shown
    assert "reply shown: Hello Ada" in capsys.readouterr().out
    assert exits.codes == []


def test_the_screenshot_driver_exits_non_zero_when_its_message_is_not_answered(make_window, qtbot, tmp_path, capsys):
    exits = _Exits()
    runtime = ScriptedRuntime(context_window=32768)  # nothing queued: the turn fails without a reply
    window = make_window(runtime, start=False)
    shot = tmp_path / "shot.png"
    drive(window, str(shot), "Hi, I am Ada", give_up_after_s=60, exit=exits.exit)
    window.start()
    qtbot.waitUntil(lambda: bool(exits.codes), timeout=20_000)
    assert exits.codes == [5] and not shot.exists()
    assert "not answered" in capsys.readouterr().out
