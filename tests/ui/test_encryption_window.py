"""The window and an encrypted store: the passphrase dialog at start (a wrong one is said and asked
again, Quit opens nothing), Settings → Privacy, and a conversion run between two windows."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from memdesk.app.services import open_services
from memdesk.core.base.errors import SchemaTooNewError
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.storage.driver import file_is_encrypted
from memdesk.ui.dialogs.passphrase import WRONG, PassphraseDialog, unlock_store
from memdesk.ui.dialogs.privacy import PrivacyPanel, StoreConversion
from memdesk.ui.startup import main as window_main
from memdesk.ui.window.main_window import MainWindow

SECRET = "blue 'heron' \"42\""


def open_with(key):
    return open_services(Paths.from_environment(), key=key, embedder=HashingEmbedder())


def make_store(key):
    """A store with one agent; the scripted model answers nothing, so no login turn may ask it."""
    services = open_with(key)
    services.create_agent("sam")
    services.settings_store.set("login_after_minutes", 0)
    services.settings_store.set("graph_model_facts", False)
    services.close()
    return Paths.from_environment().database


@pytest.fixture
def encrypted_store(memdesk_home):
    return make_store(SECRET)


def answer_dialog(*passphrases: str, quit_after: bool = False) -> list[str]:
    """Type each passphrase into the passphrase dialog when it shows, press Unlock, and record
    the error shown after each; then Quit if asked."""
    seen: list[str] = []
    queue = list(passphrases)

    def poll() -> None:
        dialog = next(
            (w for w in QApplication.topLevelWidgets() if isinstance(w, PassphraseDialog) and w.isVisible()), None
        )
        if dialog is None:
            QTimer.singleShot(10, poll)
            return
        if dialog.attempts:
            seen.append(dialog.error.text())
        if queue:
            dialog.field.setText(queue.pop(0))
            dialog.unlock_button.click()
            QTimer.singleShot(10, poll)
        elif quit_after:
            dialog.quit_button.click()

    QTimer.singleShot(0, poll)
    return seen


def test_a_wrong_passphrase_is_said_in_the_dialog_and_the_right_one_opens_the_store(qtbot, encrypted_store):
    errors = answer_dialog("not it", SECRET)
    services = unlock_store(encrypted_store, open_with)
    try:
        assert errors == [WRONG]
        assert services.key == SECRET and services.agents.find("sam") is not None
    finally:
        services.close()


def test_quit_in_the_passphrase_dialog_opens_nothing(qtbot, encrypted_store):
    opened = []
    answer_dialog("wrong", quit_after=True)
    assert unlock_store(encrypted_store, lambda key: opened.append(open_with(key))) is None
    assert opened == []


def test_an_empty_passphrase_is_not_tried(qtbot, encrypted_store):
    tried = []
    dialog = PassphraseDialog(encrypted_store, tried.append)
    qtbot.addWidget(dialog)
    dialog.on_unlock()
    assert tried == [] and dialog.error.text() and not dialog.result()


def test_a_store_that_cannot_open_for_another_reason_is_raised_not_retried(qtbot, encrypted_store):
    def too_new(_key):
        raise SchemaTooNewError("written by a newer MemDesk")

    answer_dialog(SECRET)
    with pytest.raises(SchemaTooNewError):
        unlock_store(encrypted_store, too_new)


# --- Settings → Privacy ------------------------------------------------------------------------
def panel(qtbot, key, requests, confirm=True):
    widget = PrivacyPanel(Paths.from_environment(), key, requests.append, confirm=lambda _parent, _conversion: confirm)
    qtbot.addWidget(widget)
    return widget


def test_privacy_on_a_plain_store_offers_to_encrypt_and_says_what_is_and_is_not_encrypted(qtbot):
    requests = []
    widget = panel(qtbot, None, requests)
    assert "not encrypted" in widget.status.text()
    assert not widget.encrypt_button.isHidden() and widget.change_button.isHidden() and widget.remove_button.isHidden()
    text = widget.explanation.text()
    assert "memdesk.sqlite3" in text and "write-ahead log" in text and "KV cache" in text and "backups" in text.lower()
    assert "Not encrypted" in text and "export" in text
    widget.new.setText("one")
    widget.repeat.setText("two")
    widget.encrypt_button.click()
    assert requests == [] and "differ" in widget.error.text()
    widget.repeat.setText("one")
    widget.encrypt_button.click()
    assert requests == [StoreConversion(None, "one")]


def test_privacy_changes_or_removes_a_passphrase_only_after_the_current_one(qtbot):
    requests = []
    widget = panel(qtbot, SECRET, requests)
    assert "is encrypted" in widget.status.text() and widget.encrypt_button.isHidden()
    widget.current.setText("wrong")
    widget.remove_button.click()
    assert requests == [] and "wrong" in widget.error.text()
    widget.current.setText(SECRET)
    widget.new.setText("fresh")
    widget.repeat.setText("fresh")
    widget.change_button.click()
    widget.remove_button.click()
    assert requests == [StoreConversion(SECRET, "fresh"), StoreConversion(SECRET, None)]


def test_privacy_does_nothing_when_the_restart_is_declined(qtbot):
    requests = []
    widget = panel(qtbot, None, requests, confirm=False)
    widget.new.setText("one")
    widget.repeat.setText("one")
    widget.encrypt_button.click()
    assert requests == []


# --- the whole start: dialog, window, conversion, window again (window_start: tests/ui/conftest.py)
def on_each_ready_window(*actions):
    """Run ``actions[i]`` on the i-th main window once its model is ready. A window that shows an
    error is closed at once (the error is kept in ``shown``), so a failing start cannot hang."""
    windows: list[MainWindow] = []
    hooked: list[MainWindow] = []
    shown: list[str] = []
    # Windows an earlier test left alive are not this start's: taking one for it hung the run.
    earlier = set(QApplication.topLevelWidgets())

    def fail(window: MainWindow, text: str) -> None:
        shown.append(text)
        QTimer.singleShot(0, window.close)

    def poll() -> None:
        for widget in QApplication.topLevelWidgets():
            if not isinstance(widget, MainWindow) or not widget.isVisible() or widget in earlier:
                continue
            if widget not in hooked:
                hooked.append(widget)
                widget.hub.shown.connect(lambda text, window=widget: fail(window, text))
            if widget.state.model_ready and widget not in windows:
                windows.append(widget)
                actions[len(windows) - 1](widget)
        if len(windows) < len(actions) and not shown:
            QTimer.singleShot(20, poll)

    QTimer.singleShot(0, poll)
    return windows, shown


def test_the_window_asks_for_the_passphrase_and_its_threads_open_the_store_with_it(
    qtbot, encrypted_store, window_start
):
    errors = answer_dialog("wrong", SECRET)
    # The agent worker opens its own connection before the model is ready; the graph worker and
    # ingestion theirs on first use: a worker without the key reports it through the hub.
    windows, shown = on_each_ready_window(lambda window: QTimer.singleShot(300, window.close))
    assert window_main.run([]) == 0
    assert shown == []
    assert errors == [WRONG] and len(windows) == 1
    assert windows[0].services.key == SECRET


def test_quitting_at_the_passphrase_dialog_exits_cleanly(qtbot, encrypted_store, window_start):
    answer_dialog(quit_after=True)
    assert window_main.run([]) == 0
    assert not [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]


def test_privacy_encrypts_between_two_windows_and_the_second_opens_without_asking(qtbot, memdesk_home, window_start):
    make_store(None)
    windows, shown = on_each_ready_window(
        lambda window: window.window_settings.request_store_conversion(StoreConversion(None, SECRET)),
        lambda window: QTimer.singleShot(0, window.close),
    )
    assert window_main.run([]) == 0
    assert shown == []
    assert len(windows) == 2 and windows[1].services.key == SECRET
    assert file_is_encrypted(Paths.from_environment().database)
    reopened = open_with(SECRET)
    assert reopened.agents.find("sam") is not None
    reopened.close()
