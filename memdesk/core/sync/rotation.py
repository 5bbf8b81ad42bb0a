"""A new group key when a device is removed: the device keeps the keys it had, and learns nothing
written after.

Every device announces, beside its signing key, an X25519 key derived from it (``box_public``).
The device that removes another draws a new pairing code, and from it (as at pairing) the new
group key; it seals that key to each remaining device (an ephemeral X25519 exchange, HKDF,
AES-GCM: only that device opens its box) in ``keys/EPOCH-DEVICE.mds``, which is encrypted with the
old key and signed by the remover; and writes ``keys/EPOCH-DEVICE.ring.mds``, the earlier keys
under the new one, for a device that pairs later with the new code (files written before are
under the earlier keys). ``group.mds`` is rewritten under the new key, so the old code pairs no
device any more. Each remaining device adopts the new key at its next sync and keeps the earlier
ones to read what was written under them. The removed device's files up to the last one that was
in the folder when it was removed are applied; its later ones are refused.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from memdesk.core.base.errors import SyncFileRefused
from memdesk.core.storage import Database
from memdesk.core.sync import pairing
from memdesk.core.sync.envelope import Header, new_signing_key, open_envelope, open_self_signed, public_of, seal
from memdesk.core.sync.folder import SyncFolder
from memdesk.core.sync.state import Device, peers, report_problem, required_device

KEYS_NAME = re.compile(r"^(\d{6})-([0-9a-f]{32})\.mds$")


def _hkdf(secret: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(secret)


def box_private(signing_key: bytes) -> X25519PrivateKey:
    return X25519PrivateKey.from_private_bytes(_hkdf(signing_key, b"memdesk sync box key"))


def box_public(signing_key: bytes) -> bytes:
    return (
        box_private(signing_key).public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )


def seal_key(key: bytes, recipient: bytes) -> dict[str, str]:
    ephemeral = X25519PrivateKey.generate()
    shared = ephemeral.exchange(X25519PublicKey.from_public_bytes(recipient))
    nonce = os.urandom(12)
    wrapped = AESGCM(_hkdf(shared, b"memdesk sync key box")).encrypt(nonce, key, recipient)
    eph = ephemeral.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return {"eph": eph.hex(), "nonce": nonce.hex(), "key": wrapped.hex()}


def open_key(box: dict[str, str], signing_key: bytes) -> bytes:
    private = box_private(signing_key)
    shared = private.exchange(X25519PublicKey.from_public_bytes(bytes.fromhex(box["eph"])))
    return AESGCM(_hkdf(shared, b"memdesk sync key box")).decrypt(
        bytes.fromhex(box["nonce"]), bytes.fromhex(box["key"]), box_public(signing_key)
    )


def _paths(folder: SyncFolder, epoch: int, device_id: str) -> tuple[Path, Path]:
    base = folder.root / "keys"
    return base / f"{epoch:06d}-{device_id}.mds", base / f"{epoch:06d}-{device_id}.ring.mds"


def rotate(db: Database, folder: SyncFolder, device: Device) -> tuple[str, list[str]]:
    """A new group key for the devices still in the group (call after marking the removed one);
    returns the new pairing code and the devices that could not be given the key (they announced
    no box key: an older MemDesk; they pair again with the new code)."""
    code = pairing.new_code()
    key = pairing.group_key(code, device.group_id)
    epoch = device.epoch + 1
    boxes, missed = {device.device_id: seal_key(key, box_public(device.signing_key))}, []
    for peer in peers(db):
        if peer.revoked:
            continue
        if peer.box_key is None:
            missed.append(peer.name or peer.device_id[:8])
            continue
        boxes[peer.device_id] = seal_key(key, peer.box_key)
    older = {str(device.epoch): device.group_key.hex()} | {
        str(e): bytes(k).hex() for e, k in db.query("SELECT epoch, key FROM sync_group_keys")
    }
    boxes_path, ring_path = _paths(folder, epoch, device.device_id)
    folder.write(
        ring_path, seal(Header(device.group_id, device.device_id, epoch, "ring"), older, key, device.signing_key)
    )
    folder.write(
        boxes_path,
        seal(
            Header(device.group_id, device.device_id, epoch, "keys"),
            {"epoch": epoch, "boxes": boxes},
            device.group_key,
            device.signing_key,
        ),
    )
    private, public = new_signing_key()
    marker = {"group": device.group_id, "public_key": public.hex()}
    folder.write(folder.root / "group.mds", seal(Header(device.group_id, "group", 0, "group"), marker, key, private))
    _adopt(db, device, epoch, key, older)
    return code, missed


def adopt(db: Database, folder: SyncFolder, device: Device, at: str) -> tuple[bool, list[str]]:
    """Take the group key of a removal another device made (if any is newer than this device's);
    returns whether the key changed, and problems to show."""
    # this device's own too: a removal killed between writing its files and keeping the new key
    known = {p.device_id: p.public_key for p in peers(db)} | {device.device_id: public_of(device.signing_key)}
    base = folder.root / "keys"
    if not base.is_dir():
        return False, []
    changed, problems = False, []
    candidates = sorted(m.groups() for p in base.iterdir() if (m := KEYS_NAME.match(p.name)))
    for epoch_text, remover in candidates:
        epoch = int(epoch_text)
        if epoch <= required_device(db).epoch or remover not in known:
            continue
        boxes_path, _ring = _paths(folder, epoch, remover)
        data = folder.read(boxes_path)
        if data is None:
            continue
        keys = required_device(db).keys
        try:
            payload = open_envelope(data, Header(device.group_id, remover, epoch, "keys"), keys, known[remover])
            box = payload["boxes"].get(device.device_id)
            if box is None:
                raise SyncFileRefused(
                    "it gives this device none: it was removed from the group, or pairs again with the new code"
                )
            key = open_key(box, device.signing_key)
        except InvalidTag:
            problem = "the new group key could not be taken: its box is damaged"
            if report_problem(db, remover, boxes_path.name, problem, at):
                problems.append(f"device {remover[:8]}: {problem}")
            continue
        except (SyncFileRefused, KeyError, ValueError, TypeError) as error:
            problem = f"the new group key could not be taken: {error}"
            if report_problem(db, remover, boxes_path.name, problem, at):
                problems.append(f"device {remover[:8]}: {problem}")
            continue
        _adopt(db, required_device(db), epoch, key, {})
        changed = True
    return changed, problems


def join_ring(db: Database, folder: SyncFolder, group_id: str, key: bytes) -> None:
    """A device pairing with a code given after a removal: the earlier keys, to read older files.
    The ring's signer is checked once its announcement is read; the key opening it is the proof."""
    base = folder.root / "keys"
    if not base.is_dir():
        return
    for path in sorted(base.glob("*.ring.mds"), reverse=True):
        match = re.match(r"^(\d{6})-([0-9a-f]{32})\.ring\.mds$", path.name)
        data = folder.read(path)
        if match is None or data is None:
            continue
        epoch, remover = int(match.group(1)), match.group(2)
        public = _announced_key(folder, group_id, remover, key)
        if public is None:
            continue
        try:
            older = open_envelope(data, Header(group_id, remover, epoch, "ring"), key, public)
        except SyncFileRefused:
            continue  # not under this code's key: an earlier removal's ring
        for old_epoch, old_key in older.items():
            db.execute(
                "INSERT OR IGNORE INTO sync_group_keys(epoch, key) VALUES (?, ?)",
                (int(old_epoch), bytes.fromhex(old_key)),
            )
        db.execute("UPDATE sync_device SET epoch = ? WHERE id = 1", (epoch,))
        return


def _announced_key(folder: SyncFolder, group_id: str, device_id: str, key: bytes) -> bytes | None:
    data = folder.read(folder.announcement(device_id))
    if data is None:
        return None
    try:
        payload = open_self_signed(data, Header(group_id, device_id, 0, "device"), key)
    except SyncFileRefused:
        return None
    return bytes.fromhex(str(payload.get("public_key", "")))


def _adopt(db: Database, device: Device, epoch: int, key: bytes, older: dict[str, str]) -> None:
    with db.transaction():
        db.execute("INSERT OR IGNORE INTO sync_group_keys(epoch, key) VALUES (?, ?)", (device.epoch, device.group_key))
        for old_epoch, old_key in older.items():
            db.execute(
                "INSERT OR IGNORE INTO sync_group_keys(epoch, key) VALUES (?, ?)",
                (int(old_epoch), bytes.fromhex(old_key)),
            )
        db.execute("UPDATE sync_device SET group_key = ?, epoch = ? WHERE id = 1", (key, epoch))
