"""Opening the store: brought up to date after a snapshot, a damaged store (or a failed migration)
offered its newest good snapshot, and where the snapshots are kept (encrypting, decrypting or
re-keying the file is store_conversion.py's). The composition root (app/services.py) opens the
store through here; so do the commands that must reach a store the app cannot open (restore,
encrypt)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import tzinfo
from pathlib import Path

from memdesk.core.base.clock import Clock, SystemClock, system_zone, zone_named
from memdesk.core.base.errors import (
    ConfigError,
    DamagedStoreError,
    MemDeskError,
    PassphraseRequiredError,
    SchemaTooNewError,
    WrongPassphraseError,
)
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.storage import Database, open_database
from memdesk.core.storage.backup import OWN_SUBFOLDER, Backups, Snapshot
from memdesk.core.storage.migrations import MIGRATIONS
from memdesk.core.storage.settings_store import SettingsStore

log = logging.getLogger("memdesk.app")


def backups_for(paths: Paths, settings: Settings, clock: Clock, *, key: str | None = None) -> Backups:
    # A folder the user chose may be shared (a group's, setgid, a synced one): MemDesk makes its
    # snapshots' folder private (0700), so it keeps them in a subfolder of its own there.
    folder = Path(settings.backup_folder).expanduser() / OWN_SUBFOLDER if settings.backup_folder else paths.backups
    return Backups(
        paths.database,
        folder,
        clock,
        key=key,
        keep_daily=settings.backup_keep_daily,
        keep_weekly=settings.backup_keep_weekly,
    )


def backups_at(paths: Paths, *, key: str | None = None) -> Backups:
    """The snapshots as the store's settings place and keep them, without migrating the store, or
    as the defaults place them when the store cannot be read (when a restore is needed). ``key``:
    an encrypted store's passphrase, which its snapshots share."""
    settings = Settings()
    if paths.database.exists():
        try:
            db = open_database(paths.database, migrate=False, key=key)
            try:
                if db.schema_version > 0:
                    settings = SettingsStore(db).load()
            finally:
                db.close()
        except (WrongPassphraseError, PassphraseRequiredError):
            raise  # the snapshots need the store's own passphrase: asking again is the caller's
        except MemDeskError:
            # A damaged store (one that lost the start saying it is encrypted, NotEncryptedError,
            # included): the default folder is where to look.
            pass
    return backups_for(paths, settings, SystemClock(lambda: user_zone(lambda: settings)), key=key)


def open_store(
    paths: Paths,
    clock: Clock | None = None,
    *,
    key: str | None = None,
    migrations: Sequence = MIGRATIONS,
) -> Database:
    """The store, brought up to date after a snapshot of it (a store that has data only). A store
    that is damaged, or whose migration fails, raises DamagedStoreError naming the newest good
    snapshot to restore."""
    clock = clock or SystemClock()
    try:
        db = open_database(paths.database, migrate=False, key=key)
    except DamagedStoreError as error:
        raise offer_snapshot(error, backups_for(paths, Settings(), clock, key=key)) from error
    try:
        db.migrate(
            migrations,
            before=lambda number: _snapshot_before_migration(db, paths, clock, number),
        )
    except SchemaTooNewError:
        db.close()
        raise
    except Exception as error:
        backups = backups_for(paths, _stored_settings(db), clock, key=db.key)
        db.close()
        damaged = DamagedStoreError(f"Could not bring {paths.database} up to date: {getattr(error, 'message', error)}")
        raise offer_snapshot(damaged, backups) from error
    return db


def _snapshot_before_migration(db: Database, paths: Paths, clock: Clock, number: int) -> None:
    try:
        backups_for(paths, _stored_settings(db), clock, key=db.key).create(f"before migration {number}")
    except MemDeskError as error:
        # Refusing to start would leave no way to change the backup folder: go on, and say so.
        log.warning("no snapshot before migration %d: %s", number, error.user_message)


def _stored_settings(db: Database) -> Settings:
    """The settings as stored, or the defaults when they cannot be read (an old or damaged store)."""
    try:
        return SettingsStore(db).load()
    except Exception:  # noqa: BLE001 - only the backup folder is wanted, and it has a default
        return Settings()


def offer_snapshot(error: DamagedStoreError, backups: Backups) -> DamagedStoreError:
    """``error`` with the newest good snapshot attached, and a hint naming the command that restores it."""
    try:
        snapshot: Snapshot | None = backups.newest_good()
    except OSError:
        snapshot = None
    if snapshot is None:
        return DamagedStoreError(
            error.message,
            hint=f"no snapshot to restore in {backups.folder}; move the file aside to start afresh",
        )
    when = snapshot.created_at.strftime("%Y-%m-%d %H:%M")
    return DamagedStoreError(
        error.message,
        hint=f"restore the snapshot of {when} with: memdesk backup restore {snapshot.id}",
        snapshot=snapshot,
    )


def user_zone(settings: Callable[[], Settings]) -> tzinfo:
    """The time_zone setting, else the system's. A name the time zone database no longer knows
    (the setting refuses unknown names) falls back to the system's, with a warning in the log."""
    try:
        return zone_named(settings().time_zone)
    except ConfigError as error:
        log.warning("time_zone setting ignored: %s", error.user_message)
        return system_zone()
