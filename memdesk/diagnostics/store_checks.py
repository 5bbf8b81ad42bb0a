"""The doctor's checks of where memories live: SQLite with its extensions, the store file (opened
read-only, never migrated), and room on the disk."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from memdesk.core.base.errors import MemDeskError, StoreError
from memdesk.core.base.settings_table import Settings
from memdesk.diagnostics.report import Check, human_size

MIN_FREE_BYTES = 500 * 1024 * 1024  # a model download, the KV cache and a few saves


def check_sqlite() -> Check:
    import sqlite_vec

    from memdesk.core.storage.driver import sqlite_module

    sqlite = sqlite_module()
    conn = sqlite.connect(":memory:")
    try:
        try:
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            vec = conn.execute("SELECT vec_version()").fetchone()[0]
        except Exception as error:
            return Check(
                "sqlite",
                False,
                f"SQLite {sqlite.sqlite_version}: sqlite-vec does not load ({error})",
                "reinstall MemDesk's dependencies (make install)",
            )
        try:
            conn.execute("CREATE VIRTUAL TABLE probe USING fts5(text)")
        except Exception:
            return Check(
                "sqlite",
                False,
                f"SQLite {sqlite.sqlite_version}, sqlite-vec {vec}, no FTS5",
                "install sqlean.py (a SQLite with FTS5)",
            )
    finally:
        conn.close()
    return Check(
        "sqlite", True, f"SQLite {sqlite.sqlite_version} ({sqlite.__name__}), sqlite-vec {vec}, FTS5 available"
    )


def check_store(path: Path, restore_hint: Callable[[], str]) -> Check:
    """``restore_hint``: what to do about a store that does not open (the newest good snapshot)."""
    from memdesk.core.storage.driver import file_is_encrypted
    from memdesk.core.storage.migrations import MIGRATIONS

    if not path.exists():
        return Check("store", True, f"{path} does not exist yet (created at first start)")
    if file_is_encrypted(path):
        # Without the passphrase an encrypted file cannot be read, and must not be called damaged.
        return _encrypted_store(path)
    try:
        conn, db = open_read_only(path)
    except Exception as error:
        return Check("store", False, f"{path} cannot be opened: {_message(error)}", restore_hint())
    try:
        version = db.schema_version
        known = len(MIGRATIONS)
        if version > known:
            return Check(
                "store",
                False,
                f"{path} was written by a newer MemDesk (schema {version}; this version knows {known})",
                "upgrade MemDesk to open it (nothing was changed)",
            )
        problems = [row[0] for row in db.query("PRAGMA integrity_check")]
        if problems != ["ok"]:
            return Check("store", False, f"{path} is damaged: {'; '.join(problems[:3])}", restore_hint())
        pending = f", {known - version} migration(s) pending (applied at next start)" if version < known else ""
        size = path.stat().st_size
        return Check(
            "store",
            True,
            f"{path}: integrity ok, schema {version} of {known}{pending}, {human_size(size)}, not encrypted",
        )
    except Exception as error:
        return Check("store", False, f"{path} cannot be read: {_message(error)}", restore_hint())
    finally:
        conn.close()


def _encrypted_store(path: Path) -> Check:
    try:
        from memdesk.core.storage.driver import cipher_module

        cipher = cipher_module()
    except StoreError:
        return Check(
            "store",
            False,
            f"{path} is encrypted, and SQLCipher (sqlcipher3) is not installed",
            "reinstall MemDesk's dependencies (make install)",
        )
    return Check(
        "store",
        True,
        f"{path}: encrypted (SQLCipher on SQLite {cipher.sqlite_version}), {human_size(path.stat().st_size)}; "
        "its integrity and schema are checked when it is opened with the passphrase",
    )


def check_disk(home: Path) -> Check:
    folder = home
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    detail = f"{human_size(free)} free in {folder}"
    if free < MIN_FREE_BYTES:
        return Check(
            "disk",
            False,
            f"{detail} (less than {human_size(MIN_FREE_BYTES)})",
            "free some disk space, or set MEMDESK_HOME to a folder on a roomier disk",
        )
    return Check("disk", True, detail)


def read_settings(path: Path) -> Settings:
    """The saved settings, read without migrating or writing; defaults when unreadable."""
    if not path.is_file():
        return Settings()
    try:
        from memdesk.core.storage.settings_store import SettingsStore

        conn, db = open_read_only(path)
        try:
            return SettingsStore(db).load()
        finally:
            conn.close()
    except Exception:
        return Settings()


def open_read_only(path: Path):
    """A read-only connection (sqlite-vec loaded) wrapped in ``Database``: the doctor never migrates."""
    import sqlite_vec

    from memdesk.core.storage.database import Database
    from memdesk.core.storage.driver import sqlite_module

    sqlite = sqlite_module()
    conn = sqlite.connect(
        f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None, check_same_thread=False, timeout=5
    )
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except Exception:
        conn.close()
        raise
    return conn, Database(conn, path)


def _message(error: BaseException) -> str:
    return error.user_message if isinstance(error, MemDeskError) else f"{type(error).__name__}: {error}"
