"""Snapshots of the store: taken without stopping the app, verified, bounded, and restorable.

Each snapshot is a copy of the store made with SQLite's online backup API, a few pages at a time,
from a connection of its own that holds one read transaction for the whole copy: WAL lets the app
keep writing meanwhile, and the copy is of one consistent moment (a copy that saw other writers'
changes would have to start over). It is written under a temporary name, checked with
``PRAGMA integrity_check``, and only then renamed into place next to a small JSON sidecar (when,
why, size, schema version, verified), so listing never opens a database. An encrypted store's
snapshots are opened with the store's key, so they are encrypted the same way.

Which snapshots are kept: those taken on purpose (``memdesk backup create``, Create now, and the one
a restore takes of what it replaces) stay until the user removes them. Of the automatic ones
(daily, before a migration, an import, a consolidation, a forget, a model switch) the newest of each
of the ``keep_daily`` most recent days that have one are kept, and the newest of each of the
``keep_weekly`` most recent ISO weeks that have one, and always the newest; days and weeks are
the user's (the clock's).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdesk.core.base.errors import BackupError, DamagedStoreError, MemDeskError, PassphraseError, StoreError
from memdesk.core.base.private_files import FOLDER_MODE, make_private
from memdesk.core.storage.cipher_pages import passphrase_fits
from memdesk.core.storage.database import Database, open_database, translate_error
from memdesk.core.storage.migrations import MIGRATIONS

if TYPE_CHECKING:
    from memdesk.core.base.clock import Clock

log = logging.getLogger("memdesk.backup")

#: Pages copied per step of the online backup, and the pause after each step that leaves the
#: other threads (the window's event loop among them) the processor and the GIL. Measured with
#: bench/privacy_backup.py (see the README's Benchmarks).
PAGES_PER_STEP = 256
PAUSE_BETWEEN_STEPS_S = 0.002

#: Snapshots taken on purpose; the rest are automatic and pruned by the keep rule.
KEPT, AUTOMATIC = "kept", "automatic"
#: The reason given to the daily snapshot.
DAILY = "daily"
BEFORE_RESTORE = "before restore"

_STORE_SUFFIX = ".sqlite3"
_SIDE_SUFFIX = ".json"
_PARTIAL = ".partial"
#: The folder MemDesk keeps its snapshots in inside a backup folder the user chose (which it
#: leaves as it is: it may be shared).
OWN_SUBFOLDER = "memdesk-snapshots"
#: A temporary copy older than this is left over from a run that ended mid-copy.
_STALE_PARTIAL_S = 3600

Progress = Callable[[int, int], None]
#: "The store's key", as a default that None (a plain file) cannot be mistaken for.
_STORE_KEY: Any = object()


@dataclass(frozen=True)
class Snapshot:
    id: str
    path: Path
    created_at: datetime
    size: int
    reason: str
    schema_version: int
    verified: bool
    kind: str = AUTOMATIC
    encrypted: bool = False

    def sidecar(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created_at": self.created_at.astimezone(UTC).isoformat(timespec="seconds"),
            "size": self.size,
            "reason": self.reason,
            "schema_version": self.schema_version,
            "verified": self.verified,
            "kind": self.kind,
            "encrypted": self.encrypted,
        }

    def as_json(self) -> dict[str, Any]:
        return {**self.sidecar(), "path": str(self.path)}


class BackupCancelled(Exception):
    """Raised from a progress callback to stop a snapshot; nothing of it is left behind."""


class Backups:
    """The snapshots of one store, in ``folder``. ``key`` is the store's passphrase (None: plain)."""

    def __init__(
        self,
        store: Path | str,
        folder: Path,
        clock: Clock,
        *,
        key: str | None = None,
        keep_daily: int,
        keep_weekly: int,
        pages_per_step: int = PAGES_PER_STEP,
        pause_s: float = PAUSE_BETWEEN_STEPS_S,
    ) -> None:
        self.store = Path(store)
        self.folder = Path(folder)
        self.clock = clock
        self.key = key
        self.keep_daily = keep_daily
        self.keep_weekly = keep_weekly
        self.pages_per_step = pages_per_step
        self.pause_s = pause_s

    # --- listing ----------------------------------------------------------------------------
    def list(self) -> list[Snapshot]:
        """Every snapshot in the folder, newest first (read from the sidecars)."""
        if not self.folder.is_dir():
            return []
        found = []
        for side in self.folder.glob(f"*{_SIDE_SUFFIX}"):
            snapshot = self._read_sidecar(side)
            if snapshot is not None and snapshot.path.exists():
                found.append(snapshot)
        return sorted(found, key=lambda s: (s.created_at, s.id), reverse=True)

    def get(self, snapshot_id: str) -> Snapshot:
        for snapshot in self.list():
            if snapshot.id == snapshot_id:
                return snapshot
        raise BackupError(
            f"There is no snapshot {snapshot_id!r} in {self.folder}", hint="list them with: memdesk backup list"
        )

    def opens_with(self, snapshot: Snapshot, passphrase: str) -> bool:
        """Whether an encrypted snapshot is under ``passphrase`` (its pages say so; nothing is
        opened): what the start-up restore of a store too damaged to tell asks before it restores."""
        return passphrase_fits(snapshot.path, passphrase)

    def newest_good(self) -> Snapshot | None:
        """The newest snapshot that passed its check when written (what a damaged store is offered)."""
        return next((s for s in self.list() if s.verified), None)

    def due(self) -> bool:
        """No snapshot yet today (the user's day)."""
        today = self.clock.now().date()
        return not any(s.created_at.astimezone(self.clock.zone).date() == today for s in self.list())

    # --- taking -----------------------------------------------------------------------------
    def create(self, reason: str, *, keep: bool = False, progress: Progress | None = None) -> Snapshot:
        """Copy the store into a new verified snapshot. ``keep``: taken on purpose, never pruned.
        ``progress(done_pages, total_pages)`` is called after each step (it may raise
        BackupCancelled to stop)."""
        self._ensure_folder()
        self._remove_stale_partials()
        created = self.clock.now()
        snapshot_id = self._new_id(created)
        final = self.folder / f"{snapshot_id}{_STORE_SUFFIX}"
        partial = self.folder / f".{snapshot_id}.{os.getpid()}{_PARTIAL}"
        try:
            self._copy(self.store, partial, progress)
            version = self._check(partial)
            os.replace(partial, final)
        except BaseException:
            self._delete(partial)
            raise
        snapshot = Snapshot(
            snapshot_id,
            final,
            created,
            final.stat().st_size,
            reason,
            version,
            True,
            KEPT if keep else AUTOMATIC,
            self.key is not None,
        )
        self._write_sidecar(snapshot)
        log.info("snapshot %s taken (%s, %d bytes)", snapshot_id, reason, snapshot.size)
        if not keep:
            self.prune()
        return snapshot

    def create_if_due(self, *, progress: Progress | None = None) -> Snapshot | None:
        """The daily snapshot, when there is none yet today."""
        return self.create(DAILY, progress=progress) if self.due() else None

    # --- checking ---------------------------------------------------------------------------
    def verify(self, snapshot_id: str) -> Snapshot:
        """Check a snapshot again (integrity check, and that it opens with the store's key);
        records the outcome in its sidecar and raises BackupError when it fails."""
        snapshot = self.get(snapshot_id)
        try:
            self._check(snapshot.path, key=self._key_of(snapshot))
        except PassphraseError as error:
            # No passphrase, or another one (the store's was changed since): the snapshot is not
            # damaged, and its record must not say so.
            raise type(error)(
                f"Snapshot {snapshot_id} is encrypted and does not open {'without a' if self.key is None else 'with this'} passphrase",
                hint="give the passphrase the store had when the snapshot was taken",
            ) from error
        except MemDeskError as error:
            self._write_sidecar(replace(snapshot, verified=False))
            raise BackupError(
                f"Snapshot {snapshot_id} is damaged: {error.message}", hint="restore another one (memdesk backup list)"
            ) from error
        checked = replace(snapshot, verified=True, size=snapshot.path.stat().st_size)
        self._write_sidecar(checked)
        return checked

    # --- restoring --------------------------------------------------------------------------
    def restore(self, snapshot_id: str, *, progress: Progress | None = None) -> Snapshot | None:
        """Replace the store with a snapshot. The snapshot is checked first (a damaged one is
        refused) and the current store is snapshotted ("before restore", kept), so the restore
        can be undone; that snapshot is returned. A store too damaged to copy is moved aside
        (``<store>.damaged-<time>``) instead, and None is returned.

        The caller makes sure nothing else uses the store meanwhile (the window closes its
        connections, the terminal holds the instance lock): the copy is one transaction, but the
        app's in-memory state would describe the store as it was."""
        snapshot = self.verify(snapshot_id)
        if snapshot.encrypted != (self.key is not None):
            states = ("encrypted", "plain") if snapshot.encrypted else ("plain", "encrypted")
            raise BackupError(
                f"Snapshot {snapshot_id} is {states[0]}, the store is {states[1]}",
                hint="encrypt or decrypt the store to match it first (memdesk encrypt / memdesk decrypt), then restore it",
            )
        if snapshot.schema_version > len(MIGRATIONS):
            raise BackupError(
                f"Snapshot {snapshot_id} was written by a newer MemDesk (schema {snapshot.schema_version})",
                hint="upgrade MemDesk to restore it",
            )
        try:
            undo = self.create(BEFORE_RESTORE, keep=True)
        except (DamagedStoreError, PassphraseError):
            # Without a SQLite header a damaged file looks like an encrypted one, and a damaged
            # encrypted one like a plain one or one under another key: either way it cannot be
            # copied, so it is moved aside, never deleted.
            undo = None
        if undo is not None:
            # The copy replaces every page in one write transaction: atomic, and safe even if a
            # connection elsewhere still has the store open.
            self._copy(snapshot.path, self.store, progress, into_existing=True)
        else:
            self._replace_damaged(snapshot.path)
        log.info("store restored from snapshot %s", snapshot_id)
        return undo

    def _replace_damaged(self, source: Path) -> None:
        aside = self.store.with_name(f"{self.store.name}.damaged-{self.clock.now().strftime('%Y%m%d-%H%M%S')}")
        staged = self.store.with_name(f".{self.store.name}.restoring")
        self._delete(staged)
        self._copy(source, staged, None)
        if self.store.exists():
            os.replace(self.store, aside)
            for suffix in ("-wal", "-shm", "-journal"):
                companion = Path(f"{self.store}{suffix}")
                if companion.exists():
                    os.replace(companion, Path(f"{aside}{suffix}"))
            log.warning("the damaged store was kept as %s", aside)
        os.replace(staged, self.store)
        make_private(self.store)

    # --- changing and removing --------------------------------------------------------------
    def rewrite(self, snapshot_id: str, change: Callable[[Database], None]) -> Snapshot:
        """Apply ``change`` to a snapshot (opened with the store's key), vacuum it so removed
        bytes leave the file, check it again and record its new size."""
        snapshot = self.get(snapshot_id)
        db = self._open(snapshot.path, key=self._key_of(snapshot))
        try:
            change(db)
            db.execute("VACUUM")
        finally:
            db.close()
        return self.verify(snapshot_id)

    def remove(self, snapshot_id: str) -> None:
        snapshot = self.get(snapshot_id)
        self._delete(snapshot.path)
        self._drop_companions(snapshot.path)
        self._delete(self._sidecar_path(snapshot.id))

    def prune(self) -> list[str]:
        """Remove the automatic snapshots the keep rule (module docstring) does not keep; returns
        their ids."""
        automatic = [s for s in self.list() if s.kind == AUTOMATIC]  # newest first
        zone = self.clock.zone
        kept: set[str] = set()
        for limit, period in ((self.keep_daily, lambda d: d.date()), (self.keep_weekly, lambda d: d.isocalendar()[:2])):
            seen: list[Any] = []
            for snapshot in automatic:
                when = period(snapshot.created_at.astimezone(zone))
                if when in seen:
                    continue
                if len(seen) >= limit:
                    break
                seen.append(when)
                kept.add(snapshot.id)
        if automatic:
            kept.add(automatic[0].id)  # the one just taken survives even a rule that keeps none
        removed = [s.id for s in automatic if s.id not in kept]
        for snapshot_id in removed:
            self.remove(snapshot_id)
        return removed

    # --- internals --------------------------------------------------------------------------
    def _key_of(self, snapshot: Snapshot) -> str | None:
        """A snapshot taken before the store was encrypted (or after it was decrypted) is plain."""
        return self.key if snapshot.encrypted else None

    def _open(self, path: Path, *, key: Any = _STORE_KEY) -> Database:
        key = self.key if key is _STORE_KEY else key
        # Only an encrypted store passes a key, so this needs nothing the plain driver lacks.
        if key is None:
            return open_database(path, migrate=False)
        return open_database(path, migrate=False, key=key)  # type: ignore[call-arg]

    def _copy(
        self, source_path: Path, target_path: Path, progress: Progress | None, *, into_existing: bool = False
    ) -> None:
        source = self._open(source_path)
        try:
            target = self._open(target_path)
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

    def _check(self, path: Path, *, key: Any = _STORE_KEY) -> int:
        """The schema version of a readable, intact copy; raises otherwise."""
        try:
            db = self._open(path, key=key)
        except PassphraseError:
            raise  # a question of the key, not of the copy (verify says so)
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

    def _new_id(self, moment: datetime) -> str:
        base = moment.astimezone(UTC).strftime("%Y%m%d-%H%M%S")
        candidate, n = base, 1
        while self._sidecar_path(candidate).exists() or (self.folder / f"{candidate}{_STORE_SUFFIX}").exists():
            n += 1
            candidate = f"{base}-{n}"
        return candidate

    def _sidecar_path(self, snapshot_id: str) -> Path:
        return self.folder / f"{snapshot_id}{_SIDE_SUFFIX}"

    def _write_sidecar(self, snapshot: Snapshot) -> None:
        path = self._sidecar_path(snapshot.id)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(snapshot.sidecar(), indent=1), encoding="utf-8")
        make_private(temporary)
        os.replace(temporary, path)

    def _read_sidecar(self, path: Path) -> Snapshot | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return Snapshot(
                id=str(data["id"]),
                path=self.folder / f"{data['id']}{_STORE_SUFFIX}",
                created_at=datetime.fromisoformat(data["created_at"]).astimezone(self.clock.zone),
                size=int(data["size"]),
                reason=str(data["reason"]),
                schema_version=int(data["schema_version"]),
                verified=bool(data["verified"]),
                kind=str(data.get("kind", AUTOMATIC)),
                encrypted=bool(data.get("encrypted", False)),
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            log.warning("ignoring unreadable snapshot record %s: %s", path, error)
            return None

    def _ensure_folder(self) -> None:
        try:
            self.folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        except OSError as error:
            raise BackupError(
                f"Could not create the backup folder {self.folder}: {error.strerror}",
                hint="choose another one in the backup_folder setting",
            ) from error
        make_private(self.folder)

    def _remove_stale_partials(self) -> None:
        cutoff = time.time() - _STALE_PARTIAL_S
        for leftover in self.folder.glob(f".*{_PARTIAL}*"):
            try:
                if leftover.stat().st_mtime < cutoff:
                    leftover.unlink()
            except OSError:
                pass

    @staticmethod
    def _drop_companions(path: Path) -> None:
        """The WAL and shared-memory files of a copy being removed."""
        for suffix in ("-wal", "-shm", "-journal"):
            Backups._delete(Path(f"{path}{suffix}"))

    @staticmethod
    def _delete(path: Path) -> None:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
