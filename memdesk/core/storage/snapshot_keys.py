"""Snapshots follow the store when it is encrypted, decrypted or re-keyed.

A snapshot is a copy of the store: left as it was, a store encrypted today would still be readable
in every snapshot taken before, and one re-keyed would still open, in its snapshots, with the
passphrase the user meant to retire. So after the store is converted (encryption.py), each snapshot
is converted the same way (a checked copy, then one rename) and its record written again. A
snapshot that cannot be (damaged, or under a passphrase older than the store's last one) is left as
it is and named, with why, for the user to remove; the lists show each snapshot's state.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from memdesk.core.base.errors import MemDeskError
from memdesk.core.storage.backup import Backups
from memdesk.core.storage.cipher_pages import passphrase_fits
from memdesk.core.storage.driver import file_is_encrypted
from memdesk.core.storage.encryption import convert_file

log = logging.getLogger("memdesk.backup")


@dataclass(frozen=True)
class SnapshotsConverted:
    converted: tuple[str, ...]
    #: (snapshot id, why it was left as it is)
    left: tuple[tuple[str, str], ...]


def convert_snapshots(backups: Backups, old_key: str | None) -> SnapshotsConverted:
    """Bring every snapshot in ``backups`` (whose ``key`` is the store's new passphrase, None: now
    plain) from the store's old passphrase ``old_key`` (None: it was plain) to the new one."""
    converted: list[str] = []
    left: list[tuple[str, str]] = []
    new_key = backups.key
    for snapshot in backups.list():
        encrypted = file_is_encrypted(snapshot.path)
        if not encrypted and new_key is None:
            continue  # plain already, as the store now is
        if encrypted and (old_key is None or not passphrase_fits(snapshot.path, old_key)):
            if new_key is not None and passphrase_fits(snapshot.path, new_key):
                continue  # under the new passphrase already (a conversion run again)
            left.append((snapshot.id, "it is encrypted with an earlier passphrase"))
            continue
        try:
            convert_file(snapshot.path, old_key if encrypted else None, new_key)
            backups.record_new_bytes(snapshot)
        except MemDeskError as error:
            log.warning("snapshot %s was not converted: %s", snapshot.id, error.user_message)
            left.append((snapshot.id, f"it could not be converted: {error.message}"))
            continue
        converted.append(snapshot.id)
    return SnapshotsConverted(tuple(converted), tuple(left))
