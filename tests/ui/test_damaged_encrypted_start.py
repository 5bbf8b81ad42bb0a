"""The start-up offer to restore a snapshot works when the store is encrypted: a damaged store is
told apart from a wrong passphrase in the unlock dialog, the passphrase typed there restores its
snapshot (asked once), and a store too damaged to say it is encrypted asks the snapshot's."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from memdesk.app import services as app_services
from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.storage.cipher_pages import PAGE_SIZE
from memdesk.ui.dialogs.passphrase import WRONG, PassphraseDialog
from memdesk.ui.startup import main as ui_main

PASSPHRASE = "correct horse battery staple"
WHEN = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def damaged_start(memdesk_home, monkeypatch):
    """An encrypted store with a snapshot, the start's message boxes answered and recorded."""
    paths = Paths.from_environment()
    services = open_services(paths, key=PASSPHRASE, embedder=HashingEmbedder())
    agent = services.create_agent("sam")
    for i in range(200):
        services.memory.recall.add(
            agent.id, role="user", kind="user_message", content=f"note {i}", search_text=f"note {i}", created_at=WHEN
        )
    services.backups.create("daily")
    services.close()
    said: dict[str, list[str]] = {"question": [], "information": [], "critical": []}
    for kind, answer in (("question", QMessageBox.StandardButton.Yes), ("information", None), ("critical", None)):
        monkeypatch.setattr(
            QMessageBox,
            kind,
            lambda _parent, _title, text, *a, _kind=kind, _answer=answer, **k: said[_kind].append(text) or _answer,
        )
    monkeypatch.setattr(
        app_services,
        "open_services",
        lambda p, key=None, **_options: open_services(p, key=key, embedder=HashingEmbedder()),
    )
    return paths, said


def answer_dialogs(*passphrases: str) -> list[tuple[str, str]]:
    """Type each passphrase into whichever passphrase dialog shows; record (the path it names, the
    error it showed before each try after the first)."""
    seen: list[tuple[str, str]] = []
    queue = list(passphrases)

    def poll() -> None:
        dialog = next(
            (w for w in QApplication.topLevelWidgets() if isinstance(w, PassphraseDialog) and w.isVisible()), None
        )
        if dialog is not None and queue:
            seen.append(
                (dialog.findChildren(type(dialog.error))[1].text(), dialog.error.text() if dialog.attempts else "")
            )
            dialog.field.setText(queue.pop(0))
            dialog.unlock_button.click()
        if queue:
            QTimer.singleShot(10, poll)

    QTimer.singleShot(0, poll)
    return seen


def _damage_first_page(path) -> None:
    with open(path, "r+b") as file:
        file.seek(200)
        data = file.read(64)
        file.seek(200)
        file.write(bytes(b ^ 0xFF for b in data))


def _opened(result) -> int:
    services, code = result
    assert services is not None and code == 0
    try:
        assert services.key == PASSPHRASE
        return services.db.scalar("SELECT count(*) FROM messages")
    finally:
        services.close()


def test_a_damaged_encrypted_store_is_not_called_a_wrong_passphrase_and_is_restored_with_the_one_typed(
    qtbot, damaged_start
):
    paths, said = damaged_start
    _damage_first_page(paths.database)
    seen = answer_dialogs("not it", PASSPHRASE)
    assert _opened(ui_main._open_or_offer_snapshot(paths, None)) >= 200
    assert [error for _where, error in seen] == [
        "",
        WRONG,
    ]  # asked once more after the wrong one, never after the right one
    assert "is damaged" in said["question"][0] and "Restore the snapshot" in said["question"][0]
    assert "damaged store was kept" in said["information"][0] and not said["critical"]


def test_a_store_too_damaged_to_say_it_is_encrypted_asks_the_snapshots_passphrase(qtbot, damaged_start):
    paths, said = damaged_start
    with open(paths.database, "r+b") as file:
        file.truncate(file.seek(0, 2) - PAGE_SIZE - 100)
    seen = answer_dialogs("not it", PASSPHRASE)
    assert _opened(ui_main._open_or_offer_snapshot(paths, None)) >= 200
    assert "Restore the snapshot" in said["question"][0]
    assert "backups" in seen[0][0] and [error for _where, error in seen] == ["", WRONG]  # the dialog names the snapshot
    assert "damaged store was kept" in said["information"][0] and not said["critical"]


def test_quit_at_the_snapshots_passphrase_restores_nothing(qtbot, damaged_start):
    paths, said = damaged_start
    with open(paths.database, "r+b") as file:
        file.truncate(file.seek(0, 2) - 100)
    before = paths.database.read_bytes()

    def quit_dialog() -> None:
        dialog = next(
            (w for w in QApplication.topLevelWidgets() if isinstance(w, PassphraseDialog) and w.isVisible()), None
        )
        if dialog is None:
            QTimer.singleShot(10, quit_dialog)
        else:
            dialog.quit_button.click()

    QTimer.singleShot(0, quit_dialog)
    assert ui_main._open_or_offer_snapshot(paths, None) == (None, 0)
    assert paths.database.read_bytes() == before and not said["information"]
