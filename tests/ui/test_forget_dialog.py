"""Memory > Forget… in the window: type a name, see what would go (grouped, samples on expanding),
confirm, and the panels and the transcript show the result; retention asks once while idle."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from memdesk.app.operations import open_retention
from memdesk.core.memory.forget import PLACEHOLDER
from memdesk.core.runtime.scripted import call, say
from memdesk.core.storage import open_database


def test_forget_previews_then_removes_and_the_window_refreshes(
    qtbot, services, roomy_runtime, make_window, send, settle
):
    window = make_window(roomy_runtime)
    roomy_runtime.enqueue(
        call("core_memory_append", "her sister", True, label="human", content="Sister: Eva"),
        say("Say hi to Eva!"),
    )
    send(window, "My sister Eva is visiting")
    roomy_runtime.enqueue(say("Enjoy the tea."))
    send(window, "I am drinking tea")
    assert "Eva" in window.chat.transcript.toPlainText()

    window.forget.action.trigger()
    dialog = window.forget.dialog
    assert dialog is not None and dialog.isVisible() and not dialog.forget_button.isEnabled()
    qtbot.keyClicks(dialog.text, "Eva")
    qtbot.keyClick(dialog.text, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: dialog.tree.topLevelItemCount() > 0, timeout=10_000)
    kinds = {
        dialog.tree.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole): dialog.tree.topLevelItem(i)
        for i in range(dialog.tree.topLevelItemCount())
    }
    assert {"messages", "core_memory", "history"} <= set(kinds)
    assert kinds["messages"].childCount() > 0 and "Eva" in kinds["messages"].child(0).text(0)
    assert not dialog.purge.isVisible()  # no backups here to purge
    assert dialog.forget_button.isEnabled()

    asked = []
    dialog.confirm = lambda question: asked.append(question) or True
    with qtbot.waitSignal(dialog.forgotten, timeout=15_000):
        dialog.forget_button.click()
    assert "Eva" in asked[0]
    assert dialog.status.text().startswith("Forgot ")
    settle(window)  # the conversation is read again off the GUI thread
    text = window.chat.transcript.toPlainText()
    assert "Eva" not in text and PLACEHOLDER in text and "I am drinking tea" in text
    assert "Eva" not in services.memory.core.get(window.state.agent_id, "human").value
    dialog.close()


def test_forget_does_nothing_without_confirmation(qtbot, services, roomy_runtime, make_window, send):
    window = make_window(roomy_runtime)
    roomy_runtime.enqueue(say("Noted."))
    send(window, "Eva likes jazz")
    dialog = window.forget.open_dialog()
    dialog.text.setText("Eva")
    dialog.on_preview()
    qtbot.waitUntil(lambda: dialog.forget_button.isEnabled(), timeout=10_000)
    dialog.confirm = lambda question: False
    dialog.forget_button.click()
    assert window.forget.dialog is dialog and "Eva likes jazz" in window.chat.transcript.toPlainText()
    assert services.memory.recall.search_text(window.state.agent_id, "jazz").total == 1
    dialog.text.setText("Zanzibar")
    dialog.on_preview()
    qtbot.waitUntil(lambda: "Nothing in" in dialog.status.text(), timeout=10_000)
    assert not dialog.forget_button.isEnabled()
    dialog.close()


def test_retention_asks_once_while_idle_then_forgets_old_messages(qtbot, services, roomy_runtime, make_window, send):
    window = make_window(roomy_runtime)
    roomy_runtime.enqueue(say("Hello"))
    send(window, "A message from today")
    agent_id = window.state.agent_id
    old = services.clock.now() - timedelta(days=400)
    services.memory.recall.add(
        agent_id, role="user", kind="user_message", content="An old line", search_text="An old line", created_at=old
    )
    open_retention(services).set_days(agent_id, 30)
    count = services.memory.recall.count(agent_id)
    asked = []
    window.forget.ask_retention = lambda description: asked.append(description) is None and False
    window.worker.session.apply_retention()  # what the idle scheduler runs when the idle time is up
    window.worker.session.apply_retention()
    qtbot.waitUntil(lambda: len(asked) == 1, timeout=10_000)
    QApplication.processEvents()
    assert len(asked) == 1 and "older than 30 days" in asked[0]  # asked once; declined: nothing removed
    assert services.memory.recall.count(agent_id) == count
    window.close()
    window = make_window(roomy_runtime)  # the next session asks again
    window.forget.ask_retention = lambda description: True
    window.worker.session.apply_retention()
    qtbot.waitUntil(lambda: services.memory.recall.count(agent_id) == count - 1, timeout=10_000)
    assert "A message from today" in window.chat.transcript.toPlainText()
    assert open_retention(services).policy(agent_id).confirmed


def test_the_dialog_sets_the_agents_retention_unconfirmed(qtbot, services, roomy_runtime, make_window):
    window = make_window(roomy_runtime)
    dialog = window.forget.open_dialog()
    assert dialog.days is not None and dialog.days.value() == 0 and dialog.days.text() == "never (keep all)"
    dialog.days.setValue(90)
    dialog.on_set_retention()
    policy = open_retention(services).policy(window.state.agent_id)
    assert policy.days == 90 and not policy.confirmed
    assert "before it first runs" in dialog.retention_note.text()
    dialog.close()


def test_backups_taken_before_can_be_purged_too(qtbot, services, roomy_runtime, make_window, send, tmp_path):
    from tests.agent.forget.backups_double import FolderBackups

    window = make_window(roomy_runtime)
    roomy_runtime.enqueue(say("Noted."))
    send(window, "Eva likes jazz")
    backups = FolderBackups(services.db, tmp_path / "backups")
    older = backups.create("daily")
    window.forget._backups = lambda: backups
    dialog = window.forget.open_dialog()
    dialog.text.setText("Eva")
    dialog.on_preview()
    qtbot.waitUntil(lambda: dialog.forget_button.isEnabled(), timeout=10_000)
    assert dialog.purge.isVisible() and "1 backup(s)" in dialog.purge.text()
    dialog.purge.setChecked(True)
    dialog.confirm = lambda question: "from the backups" in question
    with qtbot.waitSignal(dialog.forgotten, timeout=15_000) as done:
        dialog.forget_button.click()
    assert done.args[0].backups_purged == 1 and done.args[0].snapshot is None
    assert b"Eva" not in older.path.read_bytes()
    dialog.close()


def _wal(services) -> bytes:
    wal = services.paths.database.with_name(services.paths.database.name + "-wal")
    return wal.read_bytes() if wal.exists() else b""


def _forget_eva(qtbot, window, services) -> object:
    dialog = window.forget.open_dialog()
    dialog.text.setText("Eva")
    dialog.on_preview()
    qtbot.waitUntil(lambda: dialog.forget_button.isEnabled(), timeout=10_000)
    dialog.confirm = lambda question: True
    with qtbot.waitSignal(window.forget.journal_settled, timeout=30_000):
        dialog.forget_button.click()
    return dialog


def test_forget_says_when_the_journal_could_not_be_emptied(qtbot, services, roomy_runtime, make_window, send):
    """Another connection reading the store keeps the WAL, and the forgotten text in it: the window
    tries again, and says so when it still cannot (as the terminal does)."""
    window = make_window(roomy_runtime)
    roomy_runtime.enqueue(say("Say hi to Eva!"))
    send(window, "My sister Eva is visiting")
    assert b"Eva" in _wal(services)
    reader = open_database(services.paths.database, migrate=False)
    reader.execute("BEGIN")
    reader.query("SELECT count(*) FROM messages")  # a read that lasts, like a panel's
    try:
        dialog = _forget_eva(qtbot, window, services)
        status = dialog.status.text()
        assert status.startswith("Forgot ")
        assert "journal" in status and "memdesk.sqlite3-wal" in status and "reading the store" in status
    finally:
        reader.execute("COMMIT")
        reader.close()
    dialog.close()


def test_forget_empties_the_journal_once_the_other_reader_is_done(qtbot, services, roomy_runtime, make_window, send):
    window = make_window(roomy_runtime)
    roomy_runtime.enqueue(say("Say hi to Eva!"))
    send(window, "My sister Eva is visiting")
    reader = open_database(services.paths.database, migrate=False)
    reader.execute("BEGIN")
    reader.query("SELECT count(*) FROM messages")
    released: list[bool] = []

    def release_soon(_result) -> None:
        # The reader finishes a moment after the forget itself (a panel done refreshing).
        def release() -> None:
            time.sleep(0.5)
            reader.execute("COMMIT")
            released.append(True)

        threading.Thread(target=release).start()

    window.forget.forgotten_applied.connect(release_soon)
    try:
        dialog = _forget_eva(qtbot, window, services)
    finally:
        qtbot.waitUntil(lambda: bool(released), timeout=10_000)
        reader.close()
    assert "journal" not in dialog.status.text()
    assert b"Eva" not in _wal(services)
    dialog.close()
