"""Who is in the group: each device's announcement (name and public key, encrypted with the
group's key and signed by the key it announces), removals, and acknowledgements (how far each
device has applied every other device's files, which tells when a file may be compacted away)."""

from __future__ import annotations

from memdesk.core.base.errors import DuplicateDeviceError, SyncFileRefused
from memdesk.core.storage import Database
from memdesk.core.sync import rotation
from memdesk.core.sync.envelope import Header, open_envelope, open_self_signed, public_of, seal
from memdesk.core.sync.folder import SyncFolder
from memdesk.core.sync.state import Device, peers, report_problem

DUPLICATE_HINT = (
    "this store was copied from another device that syncs: stop syncing here with `memdesk sync leave`,"
    " then join again with a pairing code (this device then gets an id of its own)"
)


def announce(folder: SyncFolder, device: Device, joined_at: str) -> None:
    payload = {
        "device_id": device.device_id,
        "name": device.name,
        "public_key": public_of(device.signing_key).hex(),
        # what a new group key is sealed to when a device is removed (rotation.py)
        "box_key": rotation.box_public(device.signing_key).hex(),
        "joined_at": joined_at,
    }
    header = Header(device.group_id, device.device_id, 0, "device")
    folder.write(folder.announcement(device.device_id), seal(header, payload, device.group_key, device.signing_key))


def announce_if_stale(folder: SyncFolder, device: Device, at: str) -> None:
    """Announce again under the current group key (after a removal changed it) or with the box key
    an older MemDesk did not announce. Another device's announcement under this id is left for
    ``check_identity`` to report."""
    header = Header(device.group_id, device.device_id, 0, "device")
    data = folder.read(folder.announcement(device.device_id))
    if data is None:
        return
    try:
        payload = open_self_signed(data, header, device.keys)
    except SyncFileRefused:
        return
    if payload.get("public_key") != public_of(device.signing_key).hex():
        return
    try:
        open_self_signed(data, header, device.group_key)
        current = True
    except SyncFileRefused:
        current = False
    if not payload.get("box_key") or not current:
        announce(folder, device, str(payload.get("joined_at") or at))


def check_identity(db: Database, folder: SyncFolder, device: Device, pending: set[int]) -> None:
    """Refuse to write under an id another device writes under too (a store copied by hand)."""
    data = folder.read(folder.announcement(device.device_id))
    if data is not None:
        try:
            payload = open_self_signed(data, Header(device.group_id, device.device_id, 0, "device"), device.keys)
        except SyncFileRefused:
            payload = {}
        if payload.get("public_key") not in (None, public_of(device.signing_key).hex()):
            raise DuplicateDeviceError(
                f"Another device announces itself as this one ({device.device_id[:8]}) in the sync folder",
                hint=DUPLICATE_HINT,
            )
    for number in folder.log_numbers(device.device_id):
        if number < device.next_seq or number in pending:
            continue
        path = folder.log_path(device.device_id, number)
        if own_file(folder, device, number):
            raise DuplicateDeviceError(
                f"Another device wrote change file {number} under this device's id; this one has written"
                f" {device.next_seq - 1}",
                hint=DUPLICATE_HINT,
            )
        # Not signed by this device for this number: a replayed or planted file where this device's
        # next one goes. This device's folder is its own: the file is dropped, and said so.
        report_problem(db, device.device_id, path.name, "a file this device did not write was in its place", "")
        folder.remove(path)


def own_file(folder: SyncFolder, device: Device, number: int) -> bool:
    """Whether the file under this device's ``number`` is one it signed for that number."""
    data = folder.read(folder.log_path(device.device_id, number))
    if data is None:
        return False
    try:
        open_envelope(
            data,
            Header(device.group_id, device.device_id, number, "log"),
            device.keys,
            public_of(device.signing_key),
        )
    except SyncFileRefused:
        return False
    return True


def discover(db: Database, folder: SyncFolder, device: Device, at: str) -> list[str]:
    """Read the announcements of devices not known yet and the removals; returns problems found."""
    problems = []
    known = {p.device_id: p for p in peers(db)}
    for device_id in folder.devices():
        if device_id == device.device_id:
            continue
        data = folder.read(folder.announcement(device_id))
        if data is None:
            continue
        try:
            payload = open_self_signed(data, Header(device.group_id, device_id, 0, "device"), device.keys)
        except SyncFileRefused as error:
            if report_problem(db, device_id, "device.mds", f"its announcement was refused: {error}", at):
                problems.append(f"device {device_id[:8]}: {error}")
            continue
        if payload.get("device_id") != device_id:
            continue
        public_key = bytes.fromhex(payload["public_key"])
        box_key = bytes.fromhex(str(payload.get("box_key", ""))) or None
        peer = known.get(device_id)
        if peer is None:
            db.execute(
                "INSERT INTO sync_peers(device_id, name, public_key, box_key) VALUES (?, ?, ?, ?)",
                (device_id, str(payload.get("name", "")), public_key, box_key),
            )
        elif peer.public_key != public_key:
            problem = "two devices announce the same device id with different keys; its files are refused"
            db.execute("UPDATE sync_peers SET problem = ? WHERE device_id = ?", (problem, device_id))
            if report_problem(db, device_id, "device.mds", problem, at):
                problems.append(f"{peer.name or device_id[:8]}: {problem}")
        elif box_key is not None and peer.box_key != box_key:
            db.execute("UPDATE sync_peers SET box_key = ? WHERE device_id = ?", (box_key, device_id))
    keys = {p.device_id: p.public_key for p in peers(db)} | {device.device_id: public_of(device.signing_key)}
    for target in folder.revoked():
        data = folder.read(folder.revoked_path(target))
        if data is None:
            continue
        try:
            payload = open_self_signed(data, Header(device.group_id, target, 0, "revoke"), device.keys)
        except SyncFileRefused:
            continue
        if bytes.fromhex(payload["public_key"]) in keys.values():
            db.execute(
                "UPDATE sync_peers SET revoked = 1, revoked_upto = ? WHERE device_id = ? AND revoked = 0",
                (int(payload.get("upto", 0)), target),
            )
    return problems


def revoke(folder: SyncFolder, device: Device, target: str, upto: int) -> None:
    """``upto``: the removed device's last file in the folder now, which the others still apply."""
    payload = {
        "device_id": target,
        "by": device.device_id,
        "public_key": public_of(device.signing_key).hex(),
        "upto": upto,
    }
    header = Header(device.group_id, target, 0, "revoke")
    folder.write(folder.revoked_path(target), seal(header, payload, device.group_key, device.signing_key))


def write_acks(db: Database, folder: SyncFolder, device: Device) -> None:
    applied = {p.device_id: p.applied_seq for p in peers(db)} | {device.device_id: device.next_seq - 1}
    header = Header(device.group_id, device.device_id, 0, "acks")
    folder.write(
        folder.acks_path(device.device_id), seal(header, {"applied": applied}, device.group_key, device.signing_key)
    )


def acks_of_me(db: Database, folder: SyncFolder, device: Device) -> list[int]:
    """How far each device still in the group has applied this device's files (0 when unknown)."""
    out = []
    for peer in peers(db):
        if peer.revoked:
            continue
        data = folder.read(folder.acks_path(peer.device_id))
        seq = 0
        if data is not None:
            try:
                payload = open_envelope(
                    data, Header(device.group_id, peer.device_id, 0, "acks"), device.keys, peer.public_key
                )
                seq = int(payload.get("applied", {}).get(device.device_id, 0))
            except (SyncFileRefused, ValueError):
                seq = 0
        out.append(seq)
    return out
