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


@dataclass(frozen=True)
class Peer:
    device_id: str
    name: str
    public_key: bytes
    applied_seq: int
    last_sync: str | None
    revoked: bool
    problem: str


def this_device(db: Database) -> Device | None:
    row = db.query_one(
        "SELECT device_id, name, folder, group_id, group_key, signing_key, hlc, next_seq FROM sync_device WHERE id = 1"
    )
    if row is None:
        return None
    return Device(row[0], row[1], Path(row[2]), row[3], bytes(row[4]), bytes(row[5]), int(row[6]), int(row[7]))


def required_device(db: Database) -> Device:
    device = this_device(db)
    if device is None:
        raise SyncError("This device does not sync yet", hint=NOT_SYNCING_HINT)
    return device


def peers(db: Database) -> list[Peer]:
    rows = db.query(
        "SELECT device_id, name, public_key, applied_seq, last_sync, revoked, problem FROM sync_peers ORDER BY name"
    )
    return [Peer(r[0], r[1], bytes(r[2]), int(r[3]), r[4], bool(r[5]), r[6]) for r in rows]


def peer(db: Database, device_id: str) -> Peer | None:
    return next((p for p in peers(db) if p.device_id == device_id), None)


def report_problem(db: Database, device_id: str, file: str, problem: str, at: str) -> bool:
    """Record a refused file once; True the first time (so it is shown once, not at every sync)."""
    cursor = db.execute(
        "INSERT OR IGNORE INTO sync_problems(device_id, file, problem, at) VALUES (?, ?, ?, ?)",
        (device_id, file, problem, at),
    )
    return bool(cursor.rowcount)
