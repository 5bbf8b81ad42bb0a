"""Snapshots of the store: taken while the app writes, checked, private, bounded, restorable and undoable."""

from __future__ import annotations

import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memdesk.app.store_opening import open_store
from memdesk.core.base.clock import ManualClock
from memdesk.core.base.errors import BackupError, ConfigError, DamagedStoreError, PassphraseRequiredError
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.storage import open_database
from memdesk.core.storage.backup import AUTOMATIC, KEPT, OWN_SUBFOLDER, BackupCancelled, Backups
from memdesk.core.storage.daily_snapshots import DailySnapshots
from memdesk.core.storage.database import Database
from memdesk.core.storage.migrations import MIGRATIONS


def _store(path: Path, rows: int = 200) -> Database:
    db = open_database(path)
    db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    db.executemany("INSERT INTO notes(text) VALUES (?)", [(f"note {i} " + "x" * 500,) for i in range(rows)])
    return db


def _notes(path: Path) -> list[str]:
    db = open_database(path, migrate=False)
    try:
        return [row[0] for row in db.query("SELECT text FROM notes ORDER BY id")]
    finally:
        db.close()


def _backups(store: Path, folder: Path, clock, **options) -> Backups:
    """Snapshots kept as the declared settings keep them by default."""
    defaults = Settings()
    return Backups(
        store, folder, clock, keep_daily=defaults.backup_keep_daily, keep_weekly=defaults.backup_keep_weekly, **options
    )


@pytest.fixture
def store(tmp_path):
    db = _store(tmp_path / "store.sqlite3")
    yield db
    db.close()


@pytest.fixture
def backups(tmp_path, store, clock):
    return _backups(store.path, tmp_path / "backups", clock, pages_per_step=8, pause_s=0)


def test_a_snapshot_is_one_moment_of_the_store_while_another_connection_keeps_writing(backups, store, tmp_path):
    writer = open_database(store.path)
    written_during = []

    def write_meanwhile(done: int, total: int) -> None:
        # Another connection commits between two steps of the copy, as the app's threads do.
        if not written_during:
            writer.execute("INSERT INTO notes(text) VALUES ('written during the copy')")
            written_during.append(done)

    snapshot = backups.create("daily", progress=write_meanwhile)
    writer.close()
    assert written_during and written_during[0] < snapshot.size // 4096  # the write came mid-copy
    copied = _notes(snapshot.path)
    assert len(copied) == 200 and "written during the copy" not in copied
    assert "written during the copy" in _notes(store.path)
    check = open_database(snapshot.path, migrate=False)
    assert check.query("PRAGMA integrity_check") == [("ok",)]
    check.close()
    assert snapshot.verified and snapshot.reason == "daily" and snapshot.kind == AUTOMATIC
    assert snapshot.schema_version == len(MIGRATIONS)
    assert snapshot.size == snapshot.path.stat().st_size


def test_progress_reaches_every_page_and_a_cancelled_snapshot_leaves_nothing(backups):
    steps = []
    backups.create("daily", progress=lambda done, total: steps.append((done, total)))
    assert len(steps) > 1 and steps[-1][0] == steps[-1][1]
    assert [done for done, _ in steps] == sorted(done for done, _ in steps)

    def cancel(done: int, total: int) -> None:
        raise BackupCancelled

    before = sorted(p.name for p in backups.folder.iterdir())
    with pytest.raises(BackupCancelled):
        backups.create("daily", progress=cancel)
    assert sorted(p.name for p in backups.folder.iterdir()) == before
    assert len(backups.list()) == 1


def test_snapshots_and_their_folder_are_the_users_only(backups):
    snapshot = backups.create("daily")
    assert stat.S_IMODE(backups.folder.stat().st_mode) == 0o700
    for path in backups.folder.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert snapshot.path.parent == backups.folder


def test_the_list_says_when_why_and_how_big_newest_first(backups, clock):
    first = backups.create("before import of trip.af")
    clock.advance(hours=2)
    second = backups.create("manual", keep=True)
    listed = backups.list()
    assert [s.id for s in listed] == [second.id, first.id]
    assert [s.reason for s in listed] == ["manual", "before import of trip.af"]
    assert [s.kind for s in listed] == [KEPT, AUTOMATIC]
    assert listed[1].created_at == clock.now() - timedelta(hours=2)
    assert all(s.size > 0 and s.verified for s in listed)


def test_daily_is_due_once_per_day_of_the_user(backups, clock):
    assert backups.due()
    assert backups.create_if_due() is not None
    assert not backups.due()
    assert backups.create_if_due() is None
    clock.advance(days=1)
    assert backups.due()


def test_the_keep_rule_holds_the_newest_of_seven_days_and_four_weeks_and_every_kept_one(tmp_path, store):
    clock = ManualClock(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))  # a Thursday
    backups = Backups(store.path, tmp_path / "backups", clock, keep_daily=7, keep_weekly=4, pause_s=0)
    manual = backups.create("manual", keep=True)
    for _day in range(60):
        backups.create("daily")
        clock.advance(hours=3)
        backups.create("before consolidation")  # the newest of its day: the one kept
        clock.advance(hours=21)
    listed = backups.list()
    automatic = [s.created_at for s in listed if s.kind == AUTOMATIC]
    last = datetime(2026, 3, 1, 15, 0, tzinfo=UTC)  # the 60th day's second snapshot
    daily = [last - timedelta(days=n) for n in range(7)]
    # Weeks run Monday to Sunday: 1 March 2026 is a Sunday, so the four newest weeks end on it and
    # on the three Sundays before; the week of 1 March is already kept by the daily ones.
    weekly = [last - timedelta(days=7 * n) for n in range(1, 4)]
    assert sorted(automatic) == sorted(daily + weekly)
    assert all(s.reason == "before consolidation" for s in listed if s.kind == AUTOMATIC)
    assert manual.id in [s.id for s in listed]
    assert len(list(backups.folder.glob("*.sqlite3"))) == len(listed) == 11


def test_a_rule_that_keeps_nothing_still_keeps_the_snapshot_just_taken(tmp_path, store, clock):
    backups = Backups(store.path, tmp_path / "backups", clock, keep_daily=0, keep_weekly=0, pause_s=0)
    backups.create("daily")
    clock.advance(days=1)
    newest = backups.create("before import of trip.af")
    assert [s.id for s in backups.list()] == [newest.id]


def test_the_backup_settings_refuse_a_relative_folder_and_negative_counts(services):
    for name, value in (("backup_folder", "backups"), ("backup_keep_daily", -1), ("backup_keep_weekly", -2)):
        with pytest.raises(ConfigError):
            services.settings_store.set(name, value)
    services.settings_store.set("backup_folder", "~/memdesk-backups")
    assert services.backups.folder == Path("~/memdesk-backups").expanduser() / OWN_SUBFOLDER


def test_a_restore_brings_the_snapshot_back_and_can_itself_be_undone(backups, store):
    snapshot = backups.create("daily")
    store.execute("UPDATE notes SET text = 'changed after the snapshot' WHERE id = 1")
    undo = backups.restore(snapshot.id)
    assert _notes(store.path)[0].startswith("note 0 ")
    assert store.scalar("SELECT text FROM notes WHERE id = 1").startswith("note 0 ")  # an open connection sees it too
    assert undo is not None and undo.reason == "before restore" and undo.kind == KEPT
    backups.restore(undo.id)
    assert _notes(store.path)[0] == "changed after the snapshot"
    assert backups.prune() == [] and undo.id in [s.id for s in backups.list()]


def _damage(path: Path) -> None:
    size = path.stat().st_size
    with path.open("r+b") as file:
        file.seek(4096)
        file.write(b"\xa5" * (size - 4096))


def test_a_damaged_snapshot_is_refused_and_the_store_is_left_alone(backups, store):
    snapshot = backups.create("daily")
    store.execute("UPDATE notes SET text = 'current' WHERE id = 1")
    _damage(snapshot.path)
    with pytest.raises(BackupError, match="damaged"):
        backups.restore(snapshot.id)
    assert _notes(store.path)[0] == "current"
    assert [s.reason for s in backups.list()] == ["daily"]  # no "before restore" of a restore refused
    assert backups.list()[0].verified is False
    with pytest.raises(BackupError):
        backups.verify(snapshot.id)


def test_a_store_too_damaged_to_copy_is_moved_aside_not_lost(backups, store, tmp_path):
    snapshot = backups.create("daily")
    store.close()
    store.path.write_bytes(b"not a database at all" * 1000)
    assert backups.restore(snapshot.id) is None
    assert len(_notes(store.path)) == 200
    aside = list(tmp_path.glob("store.sqlite3.damaged-*"))
    assert [p.read_bytes()[:21] for p in aside if not p.name.endswith(("-wal", "-shm"))] == [b"not a database at all"]


def test_a_snapshot_taken_before_the_store_was_encrypted_stays_plain_and_is_not_restored_over_it(backups, store, clock):
    plain = backups.create("daily")
    assert plain.encrypted is False
    encrypted_store = _backups(store.path, backups.folder, clock, key="a passphrase")
    assert encrypted_store.verify(plain.id).verified  # opened as what it is: a plain file
    with pytest.raises(BackupError) as refused:
        encrypted_store.restore(plain.id)
    assert "is plain, the store is encrypted" in refused.value.user_message
    assert [s.id for s in backups.list()] == [plain.id]  # nothing taken, nothing changed


def test_rewrite_changes_a_snapshot_and_leaves_no_trace_of_what_it_removed(backups, store):
    store.execute("INSERT INTO notes(text) VALUES ('Eva lives in Porto')")
    snapshot = backups.create("daily")

    def forget(db: Database) -> None:
        db.execute("PRAGMA secure_delete = ON")
        db.execute("DELETE FROM notes WHERE text LIKE '%Eva%'")

    rewritten = backups.rewrite(snapshot.id, forget)
    assert b"Eva" not in snapshot.path.read_bytes()
    assert rewritten.verified and rewritten.size == snapshot.path.stat().st_size
    assert backups.get(snapshot.id).size == rewritten.size
    assert len(_notes(snapshot.path)) == 200


def test_remove_deletes_the_copy_and_its_record(backups):
    snapshot = backups.create("manual", keep=True)
    backups.remove(snapshot.id)
    assert backups.list() == [] and list(backups.folder.iterdir()) == []
    with pytest.raises(BackupError, match="no snapshot"):
        backups.get(snapshot.id)


# --- at start: migrations and damaged stores ---------------------------------------------------


def _old_store(paths: Paths) -> None:
    paths.ensure()
    db = open_database(paths.database, migrate=False)
    db.migrate(MIGRATIONS[:-1])
    db.execute("INSERT INTO settings(key, value) VALUES ('user_name', '\"Ana\"')")
    db.close()


def test_a_store_that_will_be_migrated_is_snapshotted_first(clock):
    paths = Paths.from_environment()
    _old_store(paths)
    db = open_store(paths, clock)
    db.close()
    [snapshot] = _backups(paths.database, paths.backups, clock).list()
    assert snapshot.reason == f"before migration {len(MIGRATIONS)}"
    assert snapshot.schema_version == len(MIGRATIONS) - 1
    db = open_store(paths, clock)  # up to date now: no second snapshot
    db.close()
    assert len(_backups(paths.database, paths.backups, clock).list()) == 1


def test_a_new_store_is_not_snapshotted(clock):
    paths = Paths.from_environment().ensure()
    open_store(paths, clock).close()
    assert _backups(paths.database, paths.backups, clock).list() == []


def test_a_failing_migration_offers_the_snapshot_taken_before_it(clock):
    paths = Paths.from_environment()
    _old_store(paths)

    def m_broken(db: Database) -> None:
        db.execute("THIS IS NOT SQL")

    with pytest.raises(DamagedStoreError) as failure:
        open_store(paths, clock, migrations=[*MIGRATIONS[:-1], m_broken])
    snapshot = failure.value.snapshot
    assert snapshot is not None and snapshot.reason == f"before migration {len(MIGRATIONS)}"
    assert f"memdesk backup restore {snapshot.id}" in failure.value.user_message


def test_a_damaged_store_offers_the_newest_good_snapshot(clock):
    paths = Paths.from_environment()
    _old_store(paths)
    open_store(paths, clock).close()
    backups = _backups(paths.database, paths.backups, clock)
    clock.advance(days=1)
    newest = backups.create("daily")
    clock.advance(days=1)
    damaged = backups.create("daily")
    _damage(damaged.path)
    with pytest.raises(BackupError):
        backups.verify(damaged.id)
    paths.database.write_bytes(b"garbage" * 2000)
    with pytest.raises(DamagedStoreError) as failure:
        open_store(paths, clock)
    assert failure.value.snapshot.id == newest.id
    assert f"memdesk backup restore {newest.id}" in failure.value.user_message


def test_a_damaged_store_without_snapshots_says_so(clock):
    paths = Paths.from_environment().ensure()
    paths.database.write_bytes(b"garbage" * 2000)
    with pytest.raises(DamagedStoreError) as failure:
        open_store(paths, clock)
    assert failure.value.snapshot is None
    assert "no snapshot to restore" in failure.value.user_message


# --- the daily snapshot --------------------------------------------------------------------------


def test_the_daily_snapshot_runs_on_its_own_thread_once_a_day(backups, clock):
    taken = []
    daily = DailySnapshots(lambda: backups, on_taken=taken.append)
    assert daily.check()
    daily.wait()
    assert [s.reason for s in taken] == ["daily"]
    assert daily.check()
    daily.wait()
    assert len(taken) == 1 and len(backups.list()) == 1  # not due again today
    clock.advance(days=1)
    daily.check()
    daily.wait()
    assert [s.reason for s in backups.list()] == ["daily", "daily"]
    daily.close()
    assert not daily.check()  # closed with its store


def test_a_daily_snapshot_that_fails_is_reported_not_lost_in_its_thread(tmp_path, store, clock):
    (tmp_path / "not-a-folder").write_text("a file where the folder should be")
    failures = []
    daily = DailySnapshots(
        lambda: _backups(store.path, tmp_path / "not-a-folder" / "backups", clock), on_error=failures.append
    )
    daily.check()
    daily.wait()
    assert len(failures) == 1 and isinstance(failures[0], BackupError)
    assert "backup_folder" in failures[0].user_message


def test_an_encrypted_store_s_snapshots_are_encrypted_with_its_passphrase_and_restore(tmp_path, clock):
    from memdesk.app.services import open_services
    from memdesk.core.embedding.hashing import HashingEmbedder
    from memdesk.core.storage.encryption import encrypt_store

    paths = Paths(tmp_path / "home")
    services = open_services(paths, embedder=HashingEmbedder())
    services.create_agent("sam", human="Name: Ana, who grows zucchinifield tomatoes")
    services.close()
    encrypt_store(paths.database, "secret")
    db = open_database(paths.database, key="secret")
    try:
        backups = _backups(paths.database, tmp_path / "backups", clock, key="secret", pages_per_step=8, pause_s=0)
        snapshot = backups.create("daily")
        assert b"zucchinifield" not in snapshot.path.read_bytes() and not snapshot.path.read_bytes().startswith(
            b"SQLite format 3"
        )
        backups.verify(snapshot.id)
        with pytest.raises(PassphraseRequiredError):
            open_database(snapshot.path, migrate=False)  # not without the passphrase
        copy = open_database(snapshot.path, migrate=False, key="secret")
        assert "zucchinifield" in copy.scalar("SELECT value FROM memory_blocks WHERE label = 'human'")
        copy.close()
    finally:
        db.close()


def test_a_shared_folder_chosen_for_backups_keeps_its_mode_and_memdesk_uses_a_folder_of_its_own(services, tmp_path):
    """A group's folder (setgid, group-writable) chosen as backup_folder was chmod-ed to 0700: the
    group lost it. Snapshots go in a subfolder MemDesk owns; the shared folder stays as it was."""
    shared = tmp_path / "family-share"
    shared.mkdir()
    shared.chmod(0o2775)
    (shared / "holiday.txt").write_text("not MemDesk's")
    before = stat.S_IMODE(shared.stat().st_mode)
    services.settings_store.set("backup_folder", str(shared))
    snapshot = services.backups.create("manual", keep=True)
    assert stat.S_IMODE(shared.stat().st_mode) == before == 0o2775
    assert snapshot.path.parent == shared / OWN_SUBFOLDER
    assert stat.S_IMODE(snapshot.path.parent.stat().st_mode) == 0o700
