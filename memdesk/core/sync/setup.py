"""Starting, joining and leaving a sync folder, removing a device, and how sync stands.

Starting or joining gives this device a random id and its own Ed25519 key, and puts every row it
already holds in the outbox: its first change file carries the memory it had before (a store that
existed before sync is one more device's history, not lost)."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdesk.core.base.clock import Clock, iso
from memdesk.core.base.errors import PairingCodeError, SyncError, SyncFileRefused
from memdesk.core.storage import Database
from memdesk.core.sync import devices, pairing, rotation
from memdesk.core.sync.digest import synced_digest
from memdesk.core.sync.envelope import Header, new_signing_key, open_self_signed, public_of, seal
from memdesk.core.sync.folder import SyncFolder
from memdesk.core.sync.state import peers, required_device, this_device

_ENQUEUE_ALL = (
    "INSERT INTO sync_outbox(kind, key, op) SELECT 'agents', uid, 'i' FROM agents ORDER BY id",
    "INSERT INTO sync_outbox(kind, key, op) SELECT 'documents', uid, 'i' FROM documents ORDER BY id",
    "INSERT INTO sync_outbox(kind, key, op) SELECT 'messages', uid, 'i' FROM messages"
    " WHERE conversation_id IS NULL ORDER BY id",
    "INSERT INTO sync_outbox(kind, key, op) SELECT 'imported', uid, 'i' FROM messages"
    " WHERE conversation_id IS NOT NULL ORDER BY id",
    "INSERT INTO sync_outbox(kind, key, op) SELECT 'passages', uid, 'i' FROM passages ORDER BY id",
    "INSERT INTO sync_outbox(kind, key, op) SELECT 'graph_facts', uid, 'i' FROM graph_facts"
    " WHERE author != 'extractor' ORDER BY id",
    "INSERT INTO sync_outbox(kind, key, op) SELECT 'memory_blocks', a.uid || '/' || b.label, 'u'"
    " FROM memory_blocks b JOIN agents a ON a.id = b.agent_id ORDER BY b.id",
)


def start(db: Database, clock: Clock, folder_path: Path, name: str) -> str:
    """Make ``folder_path`` a new sync folder with this device in it; returns the pairing code."""
    _refuse_if_syncing(db)
    folder = SyncFolder(folder_path)
    if folder.group_id() is not None:
        raise SyncError(
            f"{folder_path} already is a sync folder",
            hint=f"join it with its pairing code: memdesk sync join {folder_path} --code CODE",
        )
    group_id = uuid.uuid4().hex
    code = pairing.new_code()
    key = pairing.group_key(code, group_id)
    folder.create(group_id)
    private, public = new_signing_key()
    marker = {"group": group_id, "public_key": public.hex()}
    folder.write(folder.root / "group.mds", seal(Header(group_id, "group", 0, "group"), marker, key, private))
    _enable(db, clock, folder, group_id, key, private, name)
    return code


def join(db: Database, clock: Clock, folder_path: Path, code: str, name: str) -> None:
    """Pair this device with the folder's group (the code another device's start showed)."""
    _refuse_if_syncing(db)
    folder = SyncFolder(folder_path)
    group_id = folder.group_id()
    if group_id is None:
        raise SyncError(
            f"{folder_path} is not a sync folder (yet)",
            hint="wait until the program that carries it has copied it here, or check the path",
        )
    key = pairing.group_key(code, group_id)
    data = folder.read(folder.root / "group.mds")
    try:
        if data is None:
            raise SyncFileRefused("group.mds is missing")
        open_self_signed(data, Header(group_id, "group", 0, "group"), key)
    except SyncFileRefused:
        raise PairingCodeError(
            f"That pairing code does not open the sync folder {folder_path}",
            hint="type the code the first device showed (memdesk sync init); it is not stored anywhere",
        ) from None
    folder.write_ignores()
    _enable(db, clock, folder, group_id, key, new_signing_key()[0], name)
    # paired with a code given after a removal: the earlier keys, for the files written under them
    rotation.join_ring(db, folder, group_id, key)


def _enable(
    db: Database, clock: Clock, folder: SyncFolder, group_id: str, key: bytes, private: bytes, name: str
) -> None:
    device_id = os.urandom(16).hex()
    joined_at = iso(clock.now())
    with db.transaction():
        db.execute(
            "INSERT INTO sync_device(id, device_id, name, folder, group_id, group_key, signing_key, joined_at)"
            " VALUES (1, ?, ?, ?, ?, ?, ?, ?)",
            (device_id, name, str(folder.root), group_id, key, private, joined_at),
        )
        for statement in _ENQUEUE_ALL:
            db.execute(statement)
    devices.announce(folder, required_device(db), joined_at)


def _refuse_if_syncing(db: Database) -> None:
    device = this_device(db)
    if device is not None:
        raise SyncError(
            f"This device already syncs with {device.folder}",
            hint="stop first with `memdesk sync leave` to use another folder",
        )


def leave(db: Database) -> None:
    """Stop syncing here: the memory stays; the folder and the other devices are left as they are."""
    with db.transaction():
        for table in (
            "sync_device",
            "sync_outbox",
            "sync_forget_out",
            "sync_pending_file",
            "sync_peers",
            "sync_problems",
            "sync_block_versions",
            "sync_applying",
            "sync_group_keys",
        ):
            db.execute(f"DELETE FROM {table}")


@dataclass(frozen=True)
class Removed:
    name: str
    #: the pairing code for devices that join from now on (the old one pairs none any more)
    code: str
    #: devices that announced no key to seal the new group key to (an older MemDesk): they pair again
    missed: list[str]


def remove_device(db: Database, clock: Clock, target: str) -> Removed:
    """Remove a device from the group by name or id prefix: its key is revoked. The files it wrote
    before (those in the folder now) are still applied, its later ones refused; the devices still in
    the group take a new group key (rotation.py), so it reads nothing written from now on."""
    device = required_device(db)
    matches = [p for p in peers(db) if not p.revoked and (p.name == target or p.device_id.startswith(target.lower()))]
    if len(matches) != 1:
        raise SyncError(f"No single paired device is named {target!r}", hint="see `memdesk sync status` for names")
    removed, folder = matches[0], SyncFolder(device.folder)
    upto = max([removed.applied_seq, *folder.log_numbers(removed.device_id)])
    devices.revoke(folder, device, removed.device_id, upto)
    db.execute("UPDATE sync_peers SET revoked = 1, revoked_upto = ? WHERE device_id = ?", (upto, removed.device_id))
    code, missed = rotation.rotate(db, folder, device)
    devices.announce(folder, required_device(db), iso(clock.now()))
    return Removed(removed.name or removed.device_id[:8], code, missed)


def status(db: Database) -> dict[str, Any]:
    device = this_device(db)
    if device is None:
        return {"syncing": False}
    folder = SyncFolder(device.folder)
    reachable = folder.group_id() == device.group_id
    rows = [
        {
            "id": p.device_id,
            "name": p.name,
            "applied": p.applied_seq,
            "available": (folder.log_numbers(p.device_id) or [0])[-1] if reachable else None,
            "last_sync": p.last_sync,
            "problem": p.problem,
            "removed": p.revoked,
        }
        for p in peers(db)
    ]
    conflicts = [
        {"id": r[0], "agent": r[1], "label": r[2], "reason": r[3], "at": r[4]}
        for r in db.query(
            "SELECT c.id, a.name, c.label, c.reason, c.created_at FROM sync_conflicts c JOIN agents a"
            " ON a.id = c.agent_id WHERE c.resolved_at IS NULL ORDER BY c.id"
        )
    ]
    problems = [
        {"device": r[0], "file": r[1], "problem": r[2], "at": r[3]}
        for r in db.query("SELECT device_id, file, problem, at FROM sync_problems ORDER BY id DESC LIMIT 20")
    ]
    return {
        "syncing": True,
        "device": {"id": device.device_id, "name": device.name, "public_key": public_of(device.signing_key).hex()},
        "folder": str(device.folder),
        "folder_reachable": reachable,
        "sent": device.next_seq - 1,
        "waiting_changes": int(db.scalar("SELECT COUNT(*) FROM sync_outbox") or 0),
        "devices": rows,
        "conflicts": conflicts,
        "problems": problems,
        "digest": synced_digest(db),
    }
