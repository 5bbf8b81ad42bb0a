"""What MemDesk knows of each snapshot: its record, the small JSON file beside it, and whether this
store vouches for it.

A record says when and why a snapshot was taken, its size, its SHA-256, its schema version and
whether it passed its check, so listing never opens a database. Anyone who can write to the backup
folder (a shared or synced one, another program) can put files there, so a record is believed only
when it is this store's own: it carries an HMAC-SHA256 under a secret kept beside the store
(``<store>.snapshots-key``, 0600, never in the backup folder), over every field, the SHA-256 of the
snapshot's bytes included. A record without a valid MAC, or whose file no longer has the size it
records, is *foreign*: listed as such, never pruned, never offered to a damaged start, and restored
only on request, after a diff (memdesk/core/storage/foreign_snapshots.py). A snapshot's id must look
like one MemDesk gives (``20260412-081500`` or ``20260412-081500-2``) and names a file inside the
folder: a record whose id is a path is not read at all.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

from memdesk.core.base.private_files import make_private

log = logging.getLogger("memdesk.backup")

#: Snapshots taken on purpose; the rest are automatic and pruned by the keep rule.
KEPT, AUTOMATIC = "kept", "automatic"

STORE_SUFFIX = ".sqlite3"
SIDE_SUFFIX = ".json"
SECRET_SUFFIX = ".snapshots-key"
#: The ids MemDesk gives: the UTC time of the snapshot, and a counter when two share a second.
SNAPSHOT_ID = re.compile(r"[0-9]{8}-[0-9]{6}(?:-[0-9]{1,6})?")
_SECRET_BYTES = 32
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)

#: What a snapshot is, in the words of ``memdesk backup list`` and the Backups dialog.
VERIFIED, DAMAGED, FOREIGN, EARLIER_PASSPHRASE = "verified", "DAMAGED", "foreign", "earlier passphrase"


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
    sha256: str = ""
    #: The store vouches for its record (see the module docstring); False: a foreign snapshot.
    own: bool = True
    #: It did not open with the store's passphrase when last tried (taken under an earlier one).
    locked: bool = False

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
            "sha256": self.sha256,
            "locked": self.locked,
        }

    @property
    def state(self) -> str:
        """One word for what it is: foreign, DAMAGED (only for damage), under an earlier passphrase, or verified."""
        if not self.own:
            return FOREIGN
        if not self.verified:
            return DAMAGED
        return EARLIER_PASSPHRASE if self.locked else VERIFIED

    def describe_state(self, *, store_encrypted: bool) -> str:
        """Its state and its encryption, as the list shows them."""
        if self.state == FOREIGN:
            return "foreign: not taken by this MemDesk (restore only after seeing what it changes)"
        if self.state == DAMAGED:
            return DAMAGED
        if self.state == EARLIER_PASSPHRASE:
            return "encrypted with an earlier passphrase"
        if self.encrypted:
            return "verified, encrypted"
        return "verified, NOT encrypted" if store_encrypted else "verified"

    def as_json(self) -> dict[str, Any]:
        return {**self.sidecar(), "path": str(self.path), "state": self.state, "own": self.own}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def regular_file(path: Path) -> os.stat_result | None:
    """``path``'s status when it is a regular file itself (not a link to one), else None."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info if stat.S_ISREG(info.st_mode) else None


class Records:
    """The records of the snapshots in ``folder`` of the store at ``store``. ``zone()`` gives the
    user's time zone, in which dates are read."""

    def __init__(self, store: Path, folder: Path, zone: Callable[[], tzinfo]) -> None:
        self.folder = folder
        self.secret_file = store.with_name(store.name + SECRET_SUFFIX)
        self._zone = zone

    # --- names --------------------------------------------------------------------------------
    def snapshot_path(self, snapshot_id: str) -> Path | None:
        """Where snapshot ``snapshot_id`` lives, or None for an id MemDesk never gives."""
        if not SNAPSHOT_ID.fullmatch(snapshot_id):
            return None
        path = self.folder / f"{snapshot_id}{STORE_SUFFIX}"
        return path if path.parent == self.folder else None

    def sidecar_path(self, snapshot_id: str) -> Path:
        return self.folder / f"{snapshot_id}{SIDE_SUFFIX}"

    def sidecars(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return [side for side in self.folder.glob(f"*{SIDE_SUFFIX}") if SNAPSHOT_ID.fullmatch(side.stem)]

    # --- reading ------------------------------------------------------------------------------
    def read(self, side: Path) -> Snapshot | None:
        """The snapshot a record describes, when its file is there; foreign unless this store
        vouches for the record. None for what is not a record of a snapshot."""
        if regular_file(side) is None:
            return None
        try:
            data = json.loads(side.read_text(encoding="utf-8"))
            snapshot_id = str(data["id"])
            path = self.snapshot_path(snapshot_id)
            if path is None or snapshot_id != side.stem:
                log.warning("ignoring snapshot record %s: its id is not one MemDesk gives", side.name)
                return None
            snapshot = Snapshot(
                id=snapshot_id,
                path=path,
                created_at=datetime.fromisoformat(data["created_at"]).astimezone(self._zone()),
                size=int(data["size"]),
                reason=str(data["reason"]),
                schema_version=int(data["schema_version"]),
                verified=bool(data["verified"]),
                kind=str(data.get("kind", AUTOMATIC)),
                encrypted=bool(data.get("encrypted", False)),
                sha256=str(data.get("sha256", "")),
                locked=bool(data.get("locked", False)),
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            log.warning("ignoring unreadable snapshot record %s: %s", side, error)
            return None
        info = regular_file(path)
        if info is None:
            return None
        vouched = self._vouches_for(data) and info.st_size == snapshot.size
        if not vouched:
            # Nothing a foreign record says is believed but its id: its file's size is measured.
            return Snapshot(
                snapshot.id,
                path,
                snapshot.created_at,
                info.st_size,
                snapshot.reason,
                snapshot.schema_version,
                snapshot.verified,
                AUTOMATIC if snapshot.kind not in (KEPT, AUTOMATIC) else snapshot.kind,
                snapshot.encrypted,
                own=False,
            )
        return snapshot

    def _vouches_for(self, data: dict[str, Any]) -> bool:
        secret = self._secret(create=False)
        mac = data.get("mac")
        if secret is None or not isinstance(mac, str):
            return False
        fields = {key: value for key, value in data.items() if key != "mac"}
        return hmac.compare_digest(mac, _mac(secret, fields))

    # --- writing ------------------------------------------------------------------------------
    def write(self, snapshot: Snapshot) -> None:
        """Record one of this store's own snapshots (a foreign one's record is never rewritten:
        that would vouch for it)."""
        if not snapshot.own:
            raise ValueError(f"snapshot {snapshot.id} is foreign: its record is not this store's to write")
        secret = self._secret(create=True)
        assert secret is not None
        data = snapshot.sidecar()
        data["mac"] = _mac(secret, data)
        path = self.sidecar_path(snapshot.id)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data, indent=1), encoding="utf-8")
        make_private(temporary)
        os.replace(temporary, path)

    def disown(self, snapshot: Snapshot) -> None:
        """The store no longer vouches for ``snapshot`` (its bytes changed behind MemDesk's back):
        its record is written again without a MAC, so it is foreign from now on."""
        path = self.sidecar_path(snapshot.id)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(snapshot.sidecar(), indent=1), encoding="utf-8")
        make_private(temporary)
        os.replace(temporary, path)

    def _secret(self, *, create: bool) -> bytes | None:
        """The store's snapshot secret (made on the first snapshot); None when there is none yet,
        or what is there is not a private file of its own (then nothing is vouched for)."""
        try:
            fd = os.open(self.secret_file, os.O_RDONLY | _NO_FOLLOW)
        except FileNotFoundError:
            if not create:
                return None
            return self._new_secret()
        except OSError as error:
            log.warning("the snapshot secret %s cannot be read: %s", self.secret_file, error)
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                log.warning("the snapshot secret %s is not a file of its own: ignored", self.secret_file)
                return None
            secret = os.read(fd, _SECRET_BYTES + 1)
        finally:
            os.close(fd)
        return secret if len(secret) == _SECRET_BYTES else None

    def _new_secret(self) -> bytes | None:
        secret = os.urandom(_SECRET_BYTES)
        try:
            fd = os.open(self.secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, 0o600)
        except FileExistsError:  # another process made it meanwhile
            return self._secret(create=False)
        try:
            os.write(fd, secret)
            os.fsync(fd)
        finally:
            os.close(fd)
        return secret


def _mac(secret: bytes, fields: dict[str, Any]) -> str:
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    return hmac.new(secret, canonical, hashlib.sha256).hexdigest()
