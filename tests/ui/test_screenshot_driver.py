"""The scripted end-to-end run (`desktop.ui.main --screenshot`) used by the Xvfb test and the
socket audit: it must not hang when the window is not ready for its message yet."""

from __future__ import annotations

from PySide6.QtCore import QTimer

from desktop.core.runtime.scripted import call, say
from desktop.ui.main import _schedule_screenshot


def test_the_screenshot_driver_waits_until_the_window_takes_its_message(make_window, roomy_runtime, qtbot, tmp_path):
    """"Model ready" can come while the worker still opens the agent (Send greyed): the scripted
    run must not drop its message and then wait forever for a reply."""
    roomy_runtime.enqueue(say("Hello Ada"))
    window = make_window(roomy_runtime, start=False)
    shot = tmp_path / "shot.png"
    _schedule_screenshot(window, str(shot), "Hi, I am Ada", give_up_after_s=60)

    def looks_busy_for_a_while(_model: str) -> None:  # as while the worker opens the agent
        window.busy = True
        QTimer.singleShot(700, window, lambda: setattr(window, "busy", False))

    window.model_ready.connect(looks_busy_for_a_while)
    window.start()
    qtbot.waitUntil(shot.exists, timeout=20_000)
    assert "Hello Ada" in window.chat.transcript.toPlainText()


def test_the_screenshot_driver_denies_a_tool_that_asks_for_consent(make_window, roomy_runtime, qtbot, tmp_path, services):
    """Nobody answers a consent dialog in a scripted run: left open, it held the turn until the run
    gave up (the bundled model sometimes calls append_to_text_file). The driver denies, as a user
    clicking Deny, and the reply still comes."""
    roomy_runtime.enqueue(
        call("append_to_text_file", "note it", filename="notes.txt", content="Ada said hi"),
        say("Hello Ada"),
    )
    window = make_window(roomy_runtime, start=False)
    shot = tmp_path / "shot.png"
    _schedule_screenshot(window, str(shot), "Hi, I am Ada", give_up_after_s=60)
    window.start()
    qtbot.waitUntil(shot.exists, timeout=20_000)
    assert "Hello Ada" in window.chat.transcript.toPlainText()
    assert not (services.paths.agent_files(window.agent_id) / "notes.txt").exists()
    results = [m for m in services.memory.recall.all(window.agent_id) if m.kind == "function_result" and m.function_name == "append_to_text_file"]
    assert len(results) == 1 and '"status": "Failed"' in results[0].content and "did not allow" in results[0].content
    qtbot.waitUntil(lambda: not window.consent_dialogs, timeout=5_000)
