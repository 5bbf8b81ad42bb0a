"""One file in the sync folder: encrypted with the key the paired devices share and signed by the
device that wrote it.

Layout: ``MAGIC``, a 4-byte length, a small clear header (format, group, device, number, kind and
the 12-byte nonce: what the file's name says anyway), the AES-256-GCM ciphertext of the compressed
payload with the magic and header as associated data, and an Ed25519 signature over everything
before it. So a file that is altered or cut short fails the signature or the tag, a file copied
under another name or number fails the header check, a file from another folder fails the group,
and the folder (a cloud drive) learns only sizes and times. Nothing is applied before all of that
passed (``open_envelope`` returns the whole payload or raises).
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from memdesk.core.base.errors import SyncFileRefused

MAGIC = b"MEMDESK-SYNC\x00\x01"
FORMAT = 1
SIGNATURE_BYTES = 64
NONCE_BYTES = 12
#: A header is a few hundred bytes; anything larger is not ours.
MAX_HEADER = 4096


@dataclass(frozen=True)
class Header:
    group: str
    device: str
    seq: int
    kind: str  # 'log' | 'device' | 'snapshot' | 'acks' | 'group' | 'revoke'

    def as_dict(self, nonce: bytes) -> dict:
        return {"v": FORMAT, "g": self.group, "d": self.device, "n": self.seq, "k": self.kind, "iv": nonce.hex()}


def seal(header: Header, payload: dict, group_key: bytes, signing_key: bytes) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    head = json.dumps(header.as_dict(nonce), separators=(",", ":"), sort_keys=True).encode()
    clear = MAGIC + struct.pack(">I", len(head)) + head
    body = zlib.compress(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode(), 6)
    sealed = clear + AESGCM(group_key).encrypt(nonce, body, clear)
    return sealed + Ed25519PrivateKey.from_private_bytes(signing_key).sign(sealed)


def read_header(data: bytes) -> tuple[Header, bytes, int]:
    """The clear header (not yet trusted), its nonce and where the ciphertext starts."""
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 4 + SIGNATURE_BYTES:
        raise SyncFileRefused("not a MemDesk change file, or cut short")
    (length,) = struct.unpack(">I", data[len(MAGIC) : len(MAGIC) + 4])
    start = len(MAGIC) + 4
    if length > MAX_HEADER or start + length + SIGNATURE_BYTES > len(data):
        raise SyncFileRefused("its header is damaged or the file is cut short")
    try:
        raw = json.loads(data[start : start + length])
        header = Header(str(raw["g"]), str(raw["d"]), int(raw["n"]), str(raw["k"]))
        nonce = bytes.fromhex(raw["iv"])
        version = int(raw["v"])
    except (ValueError, KeyError, TypeError):
        raise SyncFileRefused("its header is damaged") from None
    if version != FORMAT:
        raise SyncFileRefused(f"written in sync format {version}, this MemDesk reads format {FORMAT}")
    return header, nonce, start + length


def open_envelope(data: bytes, expected: Header, group_key: bytes | Sequence[bytes], public_key: bytes) -> dict:
    """The payload of a file that is exactly what ``expected`` names, signed by ``public_key``,
    encrypted with ``group_key`` (or one of several: the current group key, then earlier ones)."""
    header, nonce, offset = read_header(data)
    if header.group != expected.group:
        raise SyncFileRefused("it belongs to another sync folder (another pairing)")
    if header != expected:
        raise SyncFileRefused(
            f"its header names {header.kind} {header.seq} of device {header.device[:8]}, not this file:"
            " a copied or replayed file"
        )
    signed, signature = data[:-SIGNATURE_BYTES], data[-SIGNATURE_BYTES:]
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, signed)
    except InvalidSignature:
        raise SyncFileRefused(
            "its signature does not match: altered, cut short or not written by that device"
        ) from None
    return _decrypt(signed, nonce, offset, group_key)


def open_self_signed(data: bytes, expected: Header, group_key: bytes | Sequence[bytes]) -> dict:
    """A device's own announcement: only a holder of the group key could have encrypted it, and it
    must be signed by the key it announces."""
    header, nonce, offset = read_header(data)
    if header != expected:
        raise SyncFileRefused("its header does not match its name")
    signed, signature = data[:-SIGNATURE_BYTES], data[-SIGNATURE_BYTES:]
    payload = _decrypt(signed, nonce, offset, group_key)
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(payload["public_key"])).verify(signature, signed)
    except (InvalidSignature, KeyError, ValueError):
        raise SyncFileRefused("its signature does not match the key it announces") from None
    return payload


def _decrypt(signed: bytes, nonce: bytes, offset: int, group_key: bytes | Sequence[bytes]) -> dict:
    body = None
    for key in [group_key] if isinstance(group_key, bytes) else group_key:
        try:
            body = AESGCM(key).decrypt(nonce, signed[offset:], signed[:offset])
            break
        except InvalidTag:
            continue
    if body is None:
        raise SyncFileRefused("it cannot be decrypted with this folder's key (another pairing, or altered)")
    try:
        payload = json.loads(zlib.decompress(body))
    except (zlib.error, ValueError):
        raise SyncFileRefused("its content is damaged") from None
    if not isinstance(payload, dict):
        raise SyncFileRefused("its content is damaged")
    return payload


def new_signing_key() -> tuple[bytes, bytes]:
    """A device's Ed25519 key pair: (private, public) raw bytes."""
    from cryptography.hazmat.primitives import serialization

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return private, public


def public_of(private: bytes) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return (
        Ed25519PrivateKey.from_private_bytes(private)
        .public_key()
        .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )
