"""Copying a store to or from a snapshot, and checking a copy.

A copy is made with SQLite's online backup API, a few pages at a time, from a connection of its own
that holds one read transaction for the whole copy: WAL lets the app keep writing meanwhile, and the
copy is of one consistent moment (a copy that saw other writers' changes would have to start over).
An encrypted store's copies are opened with its key, so they are encrypted the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memdesk.core.base.errors import BackupError, DamagedStoreError, MemDeskError, PassphraseError, StoreError
from memdesk.core.base.private_files import make_private
from memdesk.core.storage.database import Database, open_database, translate_error

#: Pages copied per step of the online backup, and the pause after each step that leaves the
#: other threads (the window's event loop among them) the processor and the GIL. Measured with
#: bench/privacy_backup.py (see the README's Benchmarks).
PAGES_PER_STEP = 256
PAUSE_BETWEEN_STEPS_S = 0.002

Progress = Callable[[int, int], None]
_COMPANIONS = ("-wal", "-shm", "-journal")


class BackupCancelled(Exception):
    """Raised from a progress callback to stop a snapshot; nothing of it is left behind."""


def open_copy(path: Path, key: str | None) -> Database:
    """A connection to a snapshot or the store, without migrating it (every connection runs with
    ``trusted_schema`` off: a snapshot's schema may be anyone's)."""
    # Only an encrypted store passes a key, so this needs nothing the plain driver lacks.
    if key is None:
        return open_database(path, migrate=False)
    return open_database(path, migrate=False, key=key)


@dataclass(frozen=True)
class Copier:
    """Copies between files of one store's family (all under ``key``, None: plain)."""

    key: str | None
    pages_per_step: int = PAGES_PER_STEP
    pause_s: float = PAUSE_BETWEEN_STEPS_S

    def copy(
        self,
        source_path: Path,
        target_path: Path,
        progress: Progress | None,
        *,
        into_existing: bool = False,
    ) -> None:
        """Every page of ``source_path`` into ``target_path`` (a new file, or ``into_existing``:
        replacing every page of an existing one in one write transaction)."""
        source = open_copy(source_path, self.key)
        try:
            target = open_copy(target_path, self.key)
        except BaseException:
            source.close()
            raise
        if not into_existing:
            # A new copy needs no journal (a copy cut short is deleted, never used), and no WAL:
            # pages written through a WAL are written twice (1 GB: twice the time). The copy keeps
            # the source's header, so it opens in WAL mode like the store.
            target.execute("PRAGMA journal_mode = OFF")
        pause = self.pause_s

        def step(_status: int, remaining: int, total: int) -> None:
            if progress is not None:
                progress(total - remaining, total)
            if pause and remaining:
                time.sleep(pause)

        try:
            # One read transaction for the whole copy: a consistent moment that writers elsewhere
            # (appending to the WAL) do not disturb.
            source.execute("BEGIN")
            source.execute("SELECT count(*) FROM sqlite_master")
            try:
                with source._lock:  # noqa: SLF001 - same package: the raw connection's backup API
                    source._conn.backup(target._conn, pages=self.pages_per_step, progress=step)  # noqa: SLF001
            finally:
                source.execute("ROLLBACK")
            # The copy went into the target's WAL. Closing would move it into the file while holding
            # the GIL (every other thread, the window's included, stopped for as long: 0.3 s for
            # 45 MB); a checkpoint as a statement lets them run.
            target.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except (BackupCancelled, MemDeskError):
            raise
        except Exception as error:
            translated = translate_error(error, source_path)
            if isinstance(translated, DamagedStoreError):
                raise translated from error
            raise BackupError(
                f"Could not copy {source_path} to {target_path}: {error}",
                hint="check the free space and permissions of the backup folder",
            ) from error
        finally:
            target.close()
            source.close()
        if not into_existing:
            make_private(target_path)


def check_copy(path: Path, key: str | None) -> int:
    """The schema version of a readable, intact copy; raises BackupError otherwise, and the
    PassphraseError of a copy that does not open with ``key`` (a question of the key, not of the
    copy)."""
    try:
        db = open_copy(path, key)
    except PassphraseError:
        raise
    except StoreError as error:
        raise BackupError(f"{path.name} cannot be opened: {error.message}") from error
    try:
        result = [row[0] for row in db.query("PRAGMA integrity_check")]
        if result != ["ok"]:
            raise BackupError(f"{path.name} failed its integrity check: {'; '.join(map(str, result[:3]))}")
        return db.schema_version
    except StoreError as error:
        if isinstance(error, BackupError):
            raise
        raise BackupError(f"{path.name} failed its integrity check: {error.message}") from error
    finally:
        db.close()


def delete(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def drop_companions(path: Path) -> None:
    """The WAL and shared-memory files of a copy being removed."""
    for suffix in _COMPANIONS:
        delete(Path(f"{path}{suffix}"))
