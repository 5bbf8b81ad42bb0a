"""The window's private chat, driven as a user would: the toggle (menu action, button, Ctrl+Shift+P)
starts it under a banner, the agent answers and edits its memory in the copy, and turning it off,
switching agents or closing the window discards it; nothing reaches the store."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QKeySequence

from memdesk.core.runtime.scripted import call, say

SECRET = "zanzibarquux"
SECRET_CORE = "quokkaflintwood"


def start_private(window, wait_for_signal, qtbot) -> None:
    # as a user would: once the window takes a message (a switch of agent ends a private chat first)
    qtbot.waitUntil(lambda: not window.state.busy and window.chat.send_button.isEnabled(), timeout=10_000)
    with wait_for_signal(window.worker.private_started):
        window.private_chat.action.trigger()
    qtbot.waitUntil(lambda: not window.state.busy and window.chat.send_button.isEnabled(), timeout=10_000)


def secret_on_disk(services) -> bool:
    path = services.paths.database
    return any(
        word.encode() in Path(f"{path}{suffix}").read_bytes()
        for suffix in ("", "-wal")
        if Path(f"{path}{suffix}").exists()
        for word in (SECRET, SECRET_CORE)
    )


def test_the_toggle_starts_a_private_chat_that_saves_nothing_and_ending_it_discards_it(
    make_window, roomy_runtime, send, services, wait_for_signal, qtbot, settle
):
    roomy_runtime.enqueue(say("Hello Ada!"))
    window = make_window(roomy_runtime)
    send(window, "Hi, I am Ada")
    saved = services.db.scalar("SELECT count(*) FROM messages")
    banner = window.private_chat.banner
    assert not banner.isVisible() and window.private_chat.button.isVisible()
    assert window.private_chat.action.shortcut() == QKeySequence("Ctrl+Shift+P")
    assert window.private_chat.action in window.menus.file.actions()

    start_private(window, wait_for_signal, qtbot)
    assert banner.isVisible() and "Private chat: nothing is saved; closing it discards it" in banner.text()
    assert window.private_chat.action.isChecked() and window.private_chat.button.isChecked()
    roomy_runtime.enqueue(
        call("core_memory_append", "note", heartbeat=True, label="human", content=f"Secret: {SECRET_CORE}"),
        call("archival_memory_insert", "keep", heartbeat=True, content=f"Ada said {SECRET}"),
        say("Your secret is safe."),
    )
    send(window, f"My secret is {SECRET}")
    assert "Your secret is safe." in window.chat.transcript.toPlainText()
    assert "Hello Ada!" in str(roomy_runtime.prompts[-1])  # the agent reads the saved conversation
    # The panels stay on the saved memory; the store holds none of the private chat.
    assert SECRET_CORE not in window.memory.editors["human"].editor.toPlainText()
    assert services.db.scalar("SELECT count(*) FROM messages") == saved
    assert not secret_on_disk(services)

    window.private_chat.action.trigger()  # off: back to the saved conversation
    settle(window)  # read off the GUI thread
    assert not banner.isVisible() and not window.private_chat.action.isChecked()
    assert "Hello Ada!" in window.chat.transcript.toPlainText()
    assert "Your secret is safe." not in window.chat.transcript.toPlainText()
    roomy_runtime.enqueue(say("Welcome back."))
    send(window, "And now a saved message")
    prompt = str(roomy_runtime.prompts[-1])
    assert "Welcome back." in window.chat.transcript.toPlainText()
    assert SECRET not in prompt and SECRET_CORE not in prompt
    assert services.db.scalar("SELECT count(*) FROM messages") == saved + 3  # message, call, result
    assert not secret_on_disk(services)


def test_switching_agents_or_closing_the_window_ends_the_private_chat(
    make_window, roomy_runtime, send, services, wait_for_signal, qtbot, settle
):
    services.create_agent("bo")
    services.create_agent("cy")
    window = make_window(roomy_runtime)
    other = next(a for a in services.agents.list() if a.id != window.state.agent_id)
    start_private(window, wait_for_signal, qtbot)
    roomy_runtime.enqueue(say("Noted."))
    send(window, f"Remember {SECRET}")
    window.switching.on_agent_switched(other.id)
    settle(window)  # the agent is read off the GUI thread, then shown
    assert not window.private_chat.active and not window.private_chat.banner.isVisible()
    assert window.state.agent_id == other.id and SECRET not in window.chat.transcript.toPlainText()

    start_private(window, wait_for_signal, qtbot)
    roomy_runtime.enqueue(say("Noted again."))
    send(window, f"Remember {SECRET} too")
    window.close()
    assert not secret_on_disk(services)
    assert services.db.scalar("SELECT count(*) FROM messages WHERE search_text LIKE ?", (f"%{SECRET}%",)) == 0


def test_documents_are_refused_during_a_private_chat(
    make_window, roomy_runtime, services, wait_for_signal, qtbot, tmp_path
):
    note = tmp_path / "note.txt"
    note.write_text(f"A private note about {SECRET}.")
    window = make_window(roomy_runtime)
    start_private(window, wait_for_signal, qtbot)
    window.documents.add_paths([str(note)])
    assert any("Documents cannot be added during a private chat" in m for m in window.hub.messages)
    assert services.db.scalar("SELECT count(*) FROM documents") == 0


def test_the_toggle_waits_for_the_current_reply(make_window, roomy_runtime, qtbot):
    window = make_window(roomy_runtime)
    window.state.busy = True  # a reply is being generated
    window.private_chat.action.trigger()
    assert not window.private_chat.active and not window.private_chat.action.isChecked()
    assert "Stop the current reply (Esc) first" in window.hub.messages[-1]
    window.state.busy = False
