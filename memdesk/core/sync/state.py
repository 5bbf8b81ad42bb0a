"""This device's sync state in the store (``sync_device``, ``sync_peers``, ``sync_problems``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memdesk.core.base.errors import SyncError
from memdesk.core.storage import Database

NOT_SYNCING_HINT = "start with `memdesk sync init FOLDER`, or pair with `memdesk sync join FOLDER --code CODE`"


@dataclass(frozen=True)
class Device:
    device_id: str
    name: str
    folder: Path
    group_id: str
    group_key: bytes
    signing_key: bytes
    hlc: int
    next_seq: int
    epoch: int = 0
    #: the group keys of earlier epochs, newest first (a device removed meanwhile knows them)
    older_keys: tuple[bytes, ...] = ()

    @property
    def keys(self) -> tuple[bytes, ...]:
        """Every key a file of this group may be encrypted with, the current one first."""
        return (self.group_key, *self.older_keys)

    @property
    def forget_key(self) -> bytes:
        """The key forgotten terms' digests are made with: the group's first, whatever the epoch,
        so digests made before a key changed still match."""
        return self.keys[-1]


@dataclass(frozen=True)
class Peer:
    device_id: str
    name: str
    public_key: bytes
    applied_seq: int
    last_sync: str | None
    revoked: bool
    problem: str
    box_key: bytes | None = None
    revoked_upto: int = 0


def this_device(db: Database) -> Device | None:
    row = db.query_one(
        "SELECT device_id, name, folder, group_id, group_key, signing_key, hlc, next_seq, epoch FROM sync_device"
        " WHERE id = 1"
    )
    if row is None:
        return None
    older = tuple(bytes(r[0]) for r in db.query("SELECT key FROM sync_group_keys ORDER BY epoch DESC"))
    return Device(
        row[0], row[1], Path(row[2]), row[3], bytes(row[4]), bytes(row[5]), int(row[6]), int(row[7]), int(row[8]), older
    )


def required_device(db: Database) -> Device:
    device = this_device(db)
    if device is None:
        raise SyncError("This device does not sync yet", hint=NOT_SYNCING_HINT)
    return device


def peers(db: Database) -> list[Peer]:
    rows = db.query(
        "SELECT device_id, name, public_key, applied_seq, last_sync, revoked, problem, box_key, revoked_upto"
        " FROM sync_peers ORDER BY name"
    )
    return [
        Peer(r[0], r[1], bytes(r[2]), int(r[3]), r[4], bool(r[5]), r[6], bytes(r[7]) if r[7] else None, int(r[8]))
        for r in rows
    ]


def peer(db: Database, device_id: str) -> Peer | None:
    return next((p for p in peers(db) if p.device_id == device_id), None)


def report_problem(db: Database, device_id: str, file: str, problem: str, at: str) -> bool:
    """Record a refused file once; True the first time (so it is shown once, not at every sync)."""
    cursor = db.execute(
        "INSERT OR IGNORE INTO sync_problems(device_id, file, problem, at) VALUES (?, ?, ?, ?)",
        (device_id, file, problem, at),
    )
    return bool(cursor.rowcount)
