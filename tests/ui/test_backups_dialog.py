"""File > Backups…: list, take (with progress, off the GUI thread), check, remove and restore
snapshots; and the offer of the newest good snapshot when the store cannot be opened at start."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from memdesk.app import services as app_services
from memdesk.app.services import open_services
from memdesk.app.store_opening import backups_at
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.storage.backup import KEPT, OWN_SUBFOLDER
from memdesk.ui.common.errors import ErrorHub
from memdesk.ui.dialogs.backups import BackupsDialog, describe_when
from memdesk.ui.startup import main as ui_main
from memdesk.ui.workers.jobs import Jobs


@pytest.fixture
def dialog(qtbot, services):
    jobs, hub = Jobs(), ErrorHub()
    dialog = BackupsDialog(services, jobs, hub)
    qtbot.addWidget(dialog)
    dialog.show()
    yield dialog
    jobs.wait()


def _create(qtbot, dialog) -> None:
    dialog.create_button.click()
    qtbot.waitUntil(lambda: not dialog.creating, timeout=10_000)


def _yes(monkeypatch, asked: list[str] | None = None, answer=QMessageBox.StandardButton.Yes) -> None:
    monkeypatch.setattr(
        QMessageBox,
        "question",
        lambda _parent, _title, text, *a, **k: (asked if asked is not None else []).append(text) or answer,
    )


def test_an_empty_folder_says_what_will_happen(dialog, services):
    assert dialog.empty_label.isVisible() and not dialog.table.isVisible()
    assert "No snapshots yet" in dialog.empty_label.text()
    assert str(services.paths.backups) in dialog.folder_label.text()
    assert "not encrypted" in dialog.encryption_label.text()
    assert not dialog.restore_button.isEnabled() and not dialog.remove_button.isEnabled()


def test_create_now_runs_off_the_gui_thread_shows_progress_and_lists_the_snapshot(qtbot, dialog, services):
    seen = []
    dialog._progress.changed.connect(lambda done, total: seen.append((done, total)))
    _create(qtbot, dialog)
    assert seen and seen[-1][0] == seen[-1][1]
    assert not dialog.progress.isVisible()
    assert dialog.table.rowCount() == 1 and dialog.table.isVisible()
    cells = [dialog.table.item(0, c).text() for c in range(4)]
    assert cells[2] == "manual (kept until you remove it)" and cells[3] == "verified"
    assert "taken and verified" in dialog.status.text()
    [snapshot] = services.backups.list()
    assert snapshot.kind == KEPT and dialog.selected().id == snapshot.id


def test_restore_asks_first_and_says_the_current_store_is_snapshotted(qtbot, dialog, monkeypatch):
    _create(qtbot, dialog)
    requested = []
    dialog.restore_requested.connect(requested.append)
    asked: list[str] = []
    _yes(monkeypatch, asked, QMessageBox.StandardButton.Cancel)
    dialog.restore_button.click()
    assert requested == [] and "snapshotted first" in asked[0]
    _yes(monkeypatch)
    dialog.restore_button.click()
    assert requested == [dialog.snapshots[0].id]


def test_a_damaged_snapshot_is_shown_as_such_when_verified(qtbot, dialog):
    _create(qtbot, dialog)
    path = dialog.snapshots[0].path
    with path.open("r+b") as file:
        file.seek(4096)
        file.write(b"\xa5" * (path.stat().st_size - 4096))
    dialog.verify_button.click()
    assert dialog.table.item(0, 3).text() == "DAMAGED"
    assert any("damaged" in message for message in dialog.hub.messages)


def test_a_foreign_snapshot_is_shown_as_such_and_restored_only_after_its_differences(qtbot, dialog, monkeypatch):
    """A snapshot MemDesk did not take (here: one of its own whose bytes changed since, and a
    planted copy with no record of this store's) says so, and Restore shows what it would change."""
    _create(qtbot, dialog)
    own = dialog.snapshots[0]
    planted = own.path.with_name("20990101-000000.sqlite3")
    planted.write_bytes(own.path.read_bytes())
    record = own.path.with_suffix(".json").read_text().replace(own.id, "20990101-000000").replace('"mac"', '"was"')
    planted.with_suffix(".json").write_text(record)
    dialog.refresh()
    states = {s.id: dialog.table.item(row, 3).text() for row, s in enumerate(dialog.snapshots)}
    assert states[own.id] == "verified" and states["20990101-000000"].startswith("foreign")
    requested: list[str] = []
    dialog.restore_requested.connect(requested.append)
    asked: list[str] = []
    dialog.ask_foreign = lambda question: asked.append(question) or False
    dialog.select("20990101-000000")
    dialog.restore_button.click()
    assert requested == [] and "not taken by this MemDesk" in asked[0] and "Restore it?" in asked[0]
    dialog.ask_foreign = lambda question: True
    dialog.restore_button.click()
    assert requested == ["20990101-000000"] and dialog.foreign_accepted == "20990101-000000"


def test_remove_asks_then_deletes(qtbot, dialog, monkeypatch):
    _create(qtbot, dialog)
    _yes(monkeypatch)
    dialog.remove_button.click()
    assert dialog.table.rowCount() == 0 and dialog.empty_label.isVisible()
    assert list(dialog.backups.folder.iterdir()) == []


def test_another_folder_takes_the_next_snapshots(qtbot, dialog, services, tmp_path):
    elsewhere = tmp_path / "synced"
    dialog.set_folder(str(elsewhere))
    assert services.settings.backup_folder == str(elsewhere) and str(elsewhere) in dialog.folder_label.text()
    _create(qtbot, dialog)
    assert len(list((elsewhere / OWN_SUBFOLDER).glob("*.sqlite3"))) == 1
    dialog.default_folder_button.click()
    assert services.settings.backup_folder == "" and dialog.table.rowCount() == 0


def test_the_window_has_file_backups_and_a_restore_closes_it_for_main_to_restore(
    make_window, roomy_runtime, qtbot, monkeypatch
):
    window = make_window(roomy_runtime)
    assert window.backups.action in window.menus.file.actions()
    dialog = window.backups.open_dialog()
    _create(qtbot, dialog)
    _yes(monkeypatch)
    dialog.restore_button.click()
    assert window.backups.restore_after_close == dialog.snapshots[0].id
    assert not window.isVisible()


def test_a_damaged_store_at_start_is_offered_its_newest_good_snapshot(services, monkeypatch):
    services.settings_store.set("user_name", "Ana")
    snapshot = services.backups.create("daily")
    paths = services.paths
    services.close()
    paths.database.write_bytes(b"garbage" * 2000)
    asked: list[str] = []
    _yes(monkeypatch, asked)
    told = []
    monkeypatch.setattr(QMessageBox, "information", lambda _parent, _title, text, *a: told.append(text))
    monkeypatch.setattr(
        app_services,
        "open_services",
        lambda p, key=None, **_options: open_services(p, key=key, embedder=HashingEmbedder()),
    )
    restored, code = ui_main._open_or_offer_snapshot(Paths.from_environment(), None)
    try:
        assert restored is not None and code == 0 and restored.settings.user_name == "Ana"
    finally:
        restored.close()
    offered = backups_at(paths).get(snapshot.id)  # its time in the zone the window shows
    assert f"Restore the snapshot of {describe_when(offered)} (daily)?" in asked[0]
    assert "damaged store was kept" in told[0]


def test_the_window_takes_the_days_snapshot_in_the_background_and_checks_hourly(make_window, roomy_runtime, services):
    window = make_window(roomy_runtime)
    window.backups.start()
    assert window.backups.timer.isActive() and window.backups.timer.interval() == 60 * 60 * 1000
    window.backups.daily.wait()
    assert [s.reason for s in services.backups.list()] == ["daily"]
    window.backups.check_daily()
    window.backups.daily.wait()
    assert len(services.backups.list()) == 1  # once a day
    window.close()
    assert not window.backups.daily.check()  # closed with the window, before the store
