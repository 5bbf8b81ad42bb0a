"""``memdesk encrypt [--change]`` and ``memdesk decrypt``: set, change or remove the store's passphrase.

Like ``memdesk chat`` they take the data folder's one-instance lock: the store is rewritten, so no
window or terminal chat may have it open meanwhile."""

from __future__ import annotations

import argparse

from memdesk.app.instance import InstanceLock
from memdesk.app.store_conversion import convert_store
from memdesk.cli.passphrase import current_passphrase, new_passphrase, passphrase_file
from memdesk.core.base.errors import NotEncryptedError, PassphraseError
from memdesk.core.base.paths import Paths
from memdesk.core.storage import open_database
from memdesk.core.storage.driver import file_is_encrypted
from memdesk.core.storage.encryption import remove_leftovers
from memdesk.core.storage.snapshot_keys import SnapshotsConverted

PROGRAM = "memdesk encrypt"
KEEP_IT_SAFE = "Keep the passphrase safe: without it nothing in the store can be read, and it cannot be recovered."


def add_command(commands) -> None:
    encrypt = commands.add_parser(
        "encrypt",
        help="encrypt the store with a passphrase (asked twice, or MEMDESK_PASSPHRASE_FILE); --change to change it",
    )
    encrypt.add_argument(
        "--change",
        action="store_true",
        help="change the passphrase of an encrypted store (the new one: asked twice, or MEMDESK_NEW_PASSPHRASE_FILE)",
    )
    encrypt.set_defaults(handler=_encrypt)
    decrypt = commands.add_parser("decrypt", help="remove the passphrase: the store is written back unencrypted")
    decrypt.set_defaults(handler=_decrypt)


def _encrypt(args: argparse.Namespace) -> int:
    paths = Paths.from_environment().ensure()
    store = paths.database
    with InstanceLock(paths.instance_lock, PROGRAM):
        remove_leftovers(store)
        encrypted = file_is_encrypted(store)
        if args.change:
            if not encrypted:
                raise NotEncryptedError(
                    f"{store} is not encrypted", hint="run `memdesk encrypt` without --change to encrypt it"
                )
            old = current_passphrase(store, prompt="Current passphrase: ")
            new = new_passphrase(current_in_file=passphrase_file() is not None)
            if new == old:
                raise PassphraseError(
                    "The new passphrase is the old one; nothing was changed", hint="choose another passphrase"
                )
            rekeyed = convert_store(paths, old, new)
            print(f"Changed the passphrase of {store}. {KEEP_IT_SAFE}")
            _say_snapshots(rekeyed, "re-encrypted with the new passphrase")
            return 0
        if encrypted:
            raise PassphraseError(
                f"{store} is already encrypted", hint="use `memdesk encrypt --change` to change its passphrase"
            )
        new = new_passphrase(current_in_file=False)
        snapshots: SnapshotsConverted | None = None
        if not store.exists() or store.stat().st_size == 0:
            open_database(store, key=new).close()  # a new store, encrypted from its first byte
        else:
            snapshots = convert_store(paths, None, new)
        print(f"Encrypted {store}. {KEEP_IT_SAFE}")
        _say_snapshots(snapshots, "encrypted like it")
    return 0


def _say_snapshots(snapshots: SnapshotsConverted | None, done: str) -> None:
    """What became of the store's snapshots: each must follow it, or be named."""
    if snapshots is None:
        return
    if snapshots.converted:
        print(f"Its {len(snapshots.converted)} snapshot(s) were {done}.")
    for snapshot_id, why in snapshots.left:
        if not snapshot_id:
            print(f"The snapshots were left as they were: {why}. See them with: memdesk backup list")
            continue
        print(f"Snapshot {snapshot_id} was left as it was: {why}. Remove it with: memdesk backup remove {snapshot_id}")


def _decrypt(args: argparse.Namespace) -> int:
    paths = Paths.from_environment().ensure()
    store = paths.database
    with InstanceLock(paths.instance_lock, PROGRAM):
        remove_leftovers(store)
        if not file_is_encrypted(store):
            raise NotEncryptedError(f"{store} is not encrypted", hint="nothing to do")
        snapshots = convert_store(paths, current_passphrase(store), None)
        print(f"Decrypted {store}: it is an ordinary SQLite file again, readable by anyone who can read the file.")
        _say_snapshots(snapshots, "decrypted like it")
    return 0
