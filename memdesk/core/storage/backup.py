"""Snapshots of the store: taken without stopping the app, verified, bounded, and restorable.

Each snapshot is a copy of the store (snapshot_copying.py) written under a temporary name, checked
with ``PRAGMA integrity_check``, and only then renamed into place next to its record
(snapshot_records.py: when, why, size, SHA-256, schema version, verified), which this store vouches
for with a MAC: a snapshot without one is *foreign*, never pruned, never offered to a damaged start,
restored only on request with what it may not bring reset (foreign_snapshots.py). An encrypted
store's snapshots are encrypted the same way, and follow it when it is encrypted, decrypted or
re-keyed (snapshot_keys.py).

Which snapshots are kept: those taken on purpose (``memdesk backup create``, Create now, and the one
a restore takes of what it replaces) stay until the user removes them. Of the automatic ones
(daily, before a migration, an import, a consolidation, a forget, a model switch) the newest of each
of the ``keep_daily`` most recent days that have one are kept, and the newest of each of the
``keep_weekly`` most recent ISO weeks that have one, and always the newest; days and weeks are
the user's (the clock's).
"""

from __future__ import annotations

import builtins
import logging
import os
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdesk.core.base.errors import (
    BackupError,
    DamagedStoreError,
    ForeignSnapshotError,
    MemDeskError,
    PassphraseError,
)
from memdesk.core.base.private_files import FOLDER_MODE, make_private
from memdesk.core.storage.cipher_pages import passphrase_fits
from memdesk.core.storage.database import Database
from memdesk.core.storage.driver import file_is_encrypted
from memdesk.core.storage.foreign_snapshots import Difference, differences, reset_what_it_may_not_bring
from memdesk.core.storage.migrations import MIGRATIONS
from memdesk.core.storage.snapshot_copying import (
    PAGES_PER_STEP,
    PAUSE_BETWEEN_STEPS_S,
    BackupCancelled,
    Copier,
    Progress,
    check_copy,
    delete,
    drop_companions,
    open_copy,
)
from memdesk.core.storage.snapshot_records import (
    AUTOMATIC,
    KEPT,
    STORE_SUFFIX,
    Records,
    Snapshot,
    file_sha256,
)

if TYPE_CHECKING:
    from memdesk.core.base.clock import Clock

__all__ = ["AUTOMATIC", "KEPT", "BackupCancelled", "Backups", "Snapshot"]

log = logging.getLogger("memdesk.backup")

#: The reason given to the daily snapshot.
DAILY = "daily"
BEFORE_RESTORE = "before restore"
#: The folder MemDesk keeps its snapshots in inside a backup folder the user chose (which it
#: leaves as it is: it may be shared).
OWN_SUBFOLDER = "memdesk-snapshots"

_PARTIAL = ".partial"
#: A temporary copy older than this is left over from a run that ended mid-copy.
_STALE_PARTIAL_S = 3600


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
        self.copier = Copier(key, pages_per_step, pause_s)
        self.records = Records(self.store, self.folder, lambda: self.clock.zone)

    # --- listing ----------------------------------------------------------------------------
    def list(self) -> list[Snapshot]:
        """Every snapshot in the folder, newest first (read from the records), foreign ones included."""
        found = []
        for side in self.records.sidecars():
            snapshot = self.records.read(side)
            if snapshot is not None:
                found.append(replace(snapshot, encrypted=file_is_encrypted(snapshot.path)))
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
        """The newest of this store's snapshots that passed its check when written (what a damaged
        store is offered): never a foreign one."""
        return next((s for s in self.list() if s.own and s.verified and not s.locked), None)

    def due(self) -> bool:
        """None of this store's snapshots is from today (the user's day)."""
        today = self.clock.now().date()
        return not any(s.own and s.created_at.astimezone(self.clock.zone).date() == today for s in self.list())

    # --- taking -----------------------------------------------------------------------------
    def create(self, reason: str, *, keep: bool = False, progress: Progress | None = None) -> Snapshot:
        """Copy the store into a new verified snapshot. ``keep``: taken on purpose, never pruned.
        ``progress(done_pages, total_pages)`` is called after each step (it may raise
        BackupCancelled to stop)."""
        self._ensure_folder()
        self._remove_stale_partials()
        created = self.clock.now()
        snapshot_id = self._new_id(created)
        final = self.folder / f"{snapshot_id}{STORE_SUFFIX}"
        partial = self.folder / f".{snapshot_id}.{os.getpid()}{_PARTIAL}"
        try:
            self.copier.copy(self.store, partial, progress)
            version = check_copy(partial, self.key)
            digest = file_sha256(partial)
            os.replace(partial, final)
        except BaseException:
            delete(partial)
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
            digest,
        )
        self.records.write(snapshot)
        log.info("snapshot %s taken (%s, %d bytes)", snapshot_id, reason, snapshot.size)
        if not keep:
            self.prune()
        return snapshot

    def create_if_due(self, *, progress: Progress | None = None) -> Snapshot | None:
        """The daily snapshot, when there is none yet today."""
        return self.create(DAILY, progress=progress) if self.due() else None

    # --- checking ---------------------------------------------------------------------------
    def verify(self, snapshot_id: str) -> Snapshot:
        """Check a snapshot again (integrity, that it opens with the store's key, and that its bytes
        are those its record vouches for); records the outcome in its record and raises BackupError
        when it is damaged, PassphraseError when it is under another passphrase (not damage)."""
        snapshot = self.get(snapshot_id)
        try:
            version = check_copy(snapshot.path, self._key_of(snapshot))
        except PassphraseError as error:
            if snapshot.own and not snapshot.locked:
                self.records.write(replace(snapshot, locked=True))
            raise type(error)(
                f"Snapshot {snapshot_id} is encrypted and does not open"
                f" {'without a' if self.key is None else 'with this'} passphrase",
                hint="give the passphrase the store had when the snapshot was taken",
            ) from error
        except MemDeskError as error:
            if snapshot.own:
                self.records.write(replace(snapshot, verified=False))
            raise BackupError(
                f"Snapshot {snapshot_id} is damaged: {error.message}", hint="restore another one (memdesk backup list)"
            ) from error
        size, digest = snapshot.path.stat().st_size, file_sha256(snapshot.path)
        if not snapshot.own:
            return replace(snapshot, verified=True, size=size, schema_version=version, sha256=digest)
        if snapshot.sha256 and digest != snapshot.sha256:
            # Intact, but not what MemDesk wrote: changed by someone else since.
            self.records.disown(snapshot)
            raise ForeignSnapshotError(
                f"Snapshot {snapshot_id} was changed since MemDesk took it: it is now treated as foreign",
                hint=f"see what it would change with: memdesk backup restore {snapshot_id} --foreign",
            )
        checked = replace(snapshot, verified=True, locked=False, size=size, sha256=digest, schema_version=version)
        self.records.write(checked)
        return checked

    # --- restoring --------------------------------------------------------------------------
    def foreign_differences(self, snapshot_id: str) -> tuple[Difference, ...]:
        """What restoring foreign snapshot ``snapshot_id`` would change, and what it would not bring."""
        snapshot = self.verify(snapshot_id)
        source = open_copy(snapshot.path, self._key_of(snapshot))
        try:
            current = self._current()
            try:
                return tuple(differences(current, source))
            finally:
                if current is not None:
                    current.close()
        finally:
            source.close()

    def restore(
        self, snapshot_id: str, *, progress: Progress | None = None, accept_foreign: bool = False
    ) -> Snapshot | None:
        """Replace the store with a snapshot. The snapshot is checked first (a damaged one is
        refused, a foreign one too unless ``accept_foreign``: then what it may not bring is reset)
        and the current store is snapshotted ("before restore", kept), so the restore can be
        undone; that snapshot is returned. A store too damaged to copy is moved aside
        (``<store>.damaged-<time>``) instead, and None is returned.

        The caller makes sure nothing else uses the store meanwhile (the window closes its
        connections, the terminal holds the instance lock): the copy is one transaction, but the
        app's in-memory state would describe the store as it was."""
        snapshot = self.verify(snapshot_id)
        if not snapshot.own and not accept_foreign:
            raise ForeignSnapshotError(
                f"Snapshot {snapshot_id} was not taken by this MemDesk (planted, copied from elsewhere or changed)",
                hint=f"see what it would change, then restore it with: memdesk backup restore {snapshot_id} --foreign",
            )
        if snapshot.encrypted != (self.key is not None):
            states = ("encrypted", "plain") if snapshot.encrypted else ("plain", "encrypted")
            raise BackupError(
                f"Snapshot {snapshot_id} is {states[0]}, the store is {states[1]}",
                hint=(
                    "encrypt or decrypt the store to match it first (memdesk encrypt / memdesk decrypt),"
                    " then restore it"
                ),
            )
        if snapshot.schema_version > len(MIGRATIONS):
            raise BackupError(
                f"Snapshot {snapshot_id} was written by a newer MemDesk (schema {snapshot.schema_version})",
                hint="upgrade MemDesk to restore it",
            )
        source = snapshot.path if snapshot.own else self._stage_foreign(snapshot)
        try:
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
                self.copier.copy(source, self.store, progress, into_existing=True)
            else:
                self._replace_damaged(source)
        finally:
            if source != snapshot.path:
                delete(source)
                drop_companions(source)
        log.info("store restored from snapshot %s%s", snapshot_id, "" if snapshot.own else " (foreign)")
        return undo

    def _stage_foreign(self, snapshot: Snapshot) -> Path:
        """A copy of a foreign snapshot beside the store, with what it may not bring reset."""
        staged = self.store.with_name(f".{self.store.name}.foreign")
        delete(staged)
        drop_companions(staged)
        try:
            self.copier.copy(snapshot.path, staged, None)
            db = open_copy(staged, self.key)
            try:
                current = self._current()
                try:
                    reset_what_it_may_not_bring(db, current)
                finally:
                    if current is not None:
                        current.close()
            finally:
                db.close()
        except BaseException:
            delete(staged)
            raise
        return staged

    def _current(self) -> Database | None:
        """The store as it is, to compare with; None when it cannot be read (damaged)."""
        try:
            return open_copy(self.store, self.key)
        except MemDeskError:
            return None

    def _replace_damaged(self, source: Path) -> None:
        aside = self.store.with_name(f"{self.store.name}.damaged-{self.clock.now().strftime('%Y%m%d-%H%M%S')}")
        staged = self.store.with_name(f".{self.store.name}.restoring")
        delete(staged)
        self.copier.copy(source, staged, None)
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
        bytes leave the file, check it again and record its new size and digest."""
        snapshot = self.get(snapshot_id)
        db = open_copy(snapshot.path, self._key_of(snapshot))
        try:
            change(db)
            db.execute("VACUUM")
        finally:
            db.close()
        return self.record_new_bytes(snapshot)

    def record_new_bytes(self, snapshot: Snapshot) -> Snapshot:
        """After MemDesk itself changed a snapshot's file (a purge, a new passphrase): checked, and
        its record (of its size and digest) written again; a foreign one stays foreign."""
        encrypted = file_is_encrypted(snapshot.path)
        key = self.key if encrypted else None
        version = check_copy(snapshot.path, key)
        changed = replace(
            snapshot,
            size=snapshot.path.stat().st_size,
            sha256=file_sha256(snapshot.path),
            schema_version=version,
            encrypted=encrypted,
            verified=True,
            locked=False,
        )
        if changed.own:
            self.records.write(changed)
        return changed

    def relabel(self, snapshot_id: str, reason: str) -> Snapshot:
        """Give a snapshot another reason (forget takes what it forgot out of the old one)."""
        snapshot = replace(self.get(snapshot_id), reason=reason)
        if snapshot.own:  # a foreign one's record is not MemDesk's to vouch for
            self.records.write(snapshot)
        return snapshot

    def remove(self, snapshot_id: str) -> None:
        snapshot = self.get(snapshot_id)
        delete(snapshot.path)
        drop_companions(snapshot.path)
        delete(self.records.sidecar_path(snapshot.id))

    def prune(self) -> builtins.list[str]:
        """Remove the automatic snapshots the keep rule (module docstring) does not keep; returns
        their ids. Foreign snapshots are never pruned: MemDesk did not take them."""
        automatic = [s for s in self.list() if s.own and s.kind == AUTOMATIC]  # newest first
        zone = self.clock.zone
        kept: set[str] = set()
        for limit, period in ((self.keep_daily, lambda d: d.date()), (self.keep_weekly, lambda d: d.isocalendar()[:2])):
            seen: builtins.list[Any] = []  # `list` is a method here
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

    def _new_id(self, moment: datetime) -> str:
        base = moment.astimezone(UTC).strftime("%Y%m%d-%H%M%S")
        candidate, n = base, 1
        while self.records.sidecar_path(candidate).exists() or (self.folder / f"{candidate}{STORE_SUFFIX}").exists():
            n += 1
            candidate = f"{base}-{n}"
        return candidate

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
