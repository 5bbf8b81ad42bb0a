"""``memdesk backup``: the store's snapshots (see memdesk/core/storage/backup.py).

    memdesk backup [list] [--json]
    memdesk backup create [--json]
    memdesk backup restore ID [--foreign [--yes]] [--json]
    memdesk backup verify [ID] [--json]
    memdesk backup remove ID [--yes]

Each snapshot is listed with its state: verified (and whether it is encrypted), DAMAGED (only
for damage), encrypted with an earlier passphrase, or foreign (not taken by this MemDesk: restored
only with --foreign, after the differences it would make are shown).

It works on a store too damaged to open (that is when a restore is needed): it reads the backup
folder setting from the store when it can, and uses the default folder otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys

from memdesk.app.instance import InstanceLock
from memdesk.app.store_opening import backups_at
from memdesk.cli.passphrase import current_passphrase, with_key
from memdesk.cli.terminal import rewrite_line
from memdesk.core.base.errors import BackupError, ForeignSnapshotError, PassphraseError, StoreError
from memdesk.core.base.paths import Paths
from memdesk.core.storage.backup import Backups, Snapshot

#: Named in the instance lock while a restore runs, so a window started meanwhile says who holds it.
RESTORING = "memdesk backup restore"


def add_command(commands) -> None:
    parser = commands.add_parser("backup", help="list, take, check and restore snapshots of the store")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=_list)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.add_parser("list", help="the snapshots, newest first (the default)").set_defaults(handler=_list)
    actions.add_parser("create", help="take a snapshot now (kept until you remove it)").set_defaults(handler=_create)
    restore = actions.add_parser(
        "restore", help="replace the store with a snapshot (the current store is snapshotted first)"
    )
    restore.add_argument("id", metavar="ID", help="the snapshot, as `memdesk backup list` shows it")
    restore.add_argument(
        "--foreign",
        action="store_true",
        help="restore a snapshot not taken by this MemDesk: shows what it changes; its model, network and "
        "backup settings stay as they are now, its imported tools are disabled",
    )
    restore.add_argument("--yes", action="store_true", help="with --foreign: do not ask for confirmation")
    restore.set_defaults(handler=_restore)
    verify = actions.add_parser("verify", help="check a snapshot, or all of them, with SQLite's integrity check")
    verify.add_argument("id", nargs="?", metavar="ID", help="the snapshot (default: every one)")
    verify.set_defaults(handler=_verify)
    remove = actions.add_parser("remove", help="delete a snapshot (one that is foreign, damaged or unwanted)")
    remove.add_argument("id", metavar="ID", help="the snapshot, as `memdesk backup list` shows it")
    remove.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    remove.set_defaults(handler=_remove)
    for action in actions.choices.values():
        action.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")


def open_backups(paths: Paths | None = None) -> Backups:
    """The store's snapshots; an encrypted store's passphrase is read as every command reads it
    (its snapshots share it)."""
    paths = (paths or Paths.from_environment()).ensure()
    return with_key(paths.database, lambda key: backups_at(paths, key=key))


def _when(snapshot: Snapshot) -> str:
    return snapshot.created_at.strftime("%Y-%m-%d %H:%M")


def _size(size: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000
    return str(size)


def _row(snapshot: Snapshot, store_encrypted: bool) -> str:
    state = snapshot.describe_state(store_encrypted=store_encrypted)
    kept = "  (kept)" if snapshot.kind == "kept" and snapshot.own else ""
    return f"{snapshot.id}\t{_when(snapshot)}\t{_size(snapshot.size)}\t{state}\t{snapshot.reason}{kept}"


def _list(args: argparse.Namespace) -> int:
    backups = open_backups()
    snapshots = backups.list()
    if args.json:
        print(json.dumps({"folder": str(backups.folder), "snapshots": [s.as_json() for s in snapshots]}, indent=2))
    elif not snapshots:
        print(f"No snapshots yet in {backups.folder}. Take one with: memdesk backup create")
    else:
        for snapshot in snapshots:
            print(_row(snapshot, backups.key is not None))
    return 0


class _Progress:
    def __init__(self, what: str) -> None:
        self.what = what
        self.shown = -1

    def __call__(self, done: int, total: int) -> None:
        percent = 100 * done // max(total, 1)
        if percent // 10 != self.shown // 10 and sys.stderr.isatty():
            rewrite_line(f"{self.what}: {percent}%")
        self.shown = percent

    def end(self) -> None:
        if self.shown >= 0 and sys.stderr.isatty():
            print(file=sys.stderr)


def _create(args: argparse.Namespace) -> int:
    backups = open_backups()
    progress = _Progress("Taking a snapshot")
    try:
        snapshot = backups.create("manual", keep=True, progress=progress)
    finally:
        progress.end()
    if args.json:
        print(json.dumps(snapshot.as_json(), indent=2))
    else:
        print(f"Snapshot {snapshot.id} taken and verified ({_size(snapshot.size)}) in {backups.folder}")
    return 0


def _restore(args: argparse.Namespace) -> int:
    paths = Paths.from_environment().ensure()
    # No window or terminal chat may use the store meanwhile: they would go on with memories
    # the restore took away.
    with InstanceLock(paths.instance_lock, RESTORING):
        backups = open_backups(paths)
        snapshot = backups.get(args.id)
        if snapshot.encrypted and backups.key is None:
            # A store too damaged to look encrypted was not asked its passphrase; its snapshot needs it.
            backups = backups_at(
                paths, key=current_passphrase(snapshot.path, prompt=f"Passphrase of snapshot {snapshot.id}: ")
            )
        if args.foreign and not snapshot.own and not _accept_foreign(backups, snapshot, args):
            print("Nothing was restored.")
            return 1
        progress = _Progress("Restoring")
        try:
            undo = backups.restore(snapshot.id, progress=progress, accept_foreign=args.foreign)
        finally:
            progress.end()
    if args.json:
        print(json.dumps({"restored": snapshot.as_json(), "undo": undo.as_json() if undo else None}, indent=2))
    elif undo is not None:
        print(f"Restored the snapshot of {_when(snapshot)} ({snapshot.id}).")
        print(f"The store as it was is snapshot {undo.id}; undo with: memdesk backup restore {undo.id}")
    else:
        print(
            f"Restored the snapshot of {_when(snapshot)} ({snapshot.id}); the damaged store was kept beside it "
            f"in {paths.database.parent}."
        )
    return 0


def _accept_foreign(backups: Backups, snapshot: Snapshot, args: argparse.Namespace) -> bool:
    """Show what restoring a foreign snapshot changes; the user's yes (or --yes)."""
    changes = backups.foreign_differences(snapshot.id)
    print(f"Snapshot {snapshot.id} was not taken by this MemDesk. Restoring it would change:")
    for change in changes:
        print(f"  {change.describe()}")
    if not changes:
        print("  no setting, enabled tool or document path")
    if args.yes:
        return True
    try:
        answer = input("Restore it, with those marked 'stays' kept as they are now? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def _remove(args: argparse.Namespace) -> int:
    backups = open_backups()
    snapshot = backups.get(args.id)
    if not args.yes:
        try:
            answer = input(
                f"Remove the snapshot of {_when(snapshot)} ({snapshot.id})? It cannot be restored afterwards. [y/N] "
            )
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            print("Kept.")
            return 1
    backups.remove(snapshot.id)
    print(f"Removed snapshot {snapshot.id}.")
    return 0


def _verify(args: argparse.Namespace) -> int:
    backups = open_backups()
    targets = [backups.get(args.id)] if args.id else backups.list()
    results: list[tuple[Snapshot, str, str | None]] = []
    for snapshot in targets:
        try:
            checked = backups.verify(snapshot.id)
            results.append((checked, "ok" if checked.own else "intact, but foreign", None))
        except PassphraseError as error:
            # Not damage: it opens with the passphrase it was taken under.
            results.append((snapshot, "encrypted with an earlier passphrase", error.message))
        except ForeignSnapshotError as error:
            results.append((snapshot, "foreign", error.message))
        except BackupError as error:
            results.append((snapshot, "DAMAGED", error.message))
        except StoreError as error:
            results.append((snapshot, "could not be checked", error.message))
    if args.json:
        print(
            json.dumps(
                [
                    {**s.as_json(), "verified": problem is None, "result": state, "problem": problem}
                    for s, state, problem in results
                ],
                indent=2,
            )
        )
    elif not results:
        print(f"No snapshots yet in {backups.folder}.")
    else:
        for snapshot, state, problem in results:
            print(f"{snapshot.id}\t{_when(snapshot)}\t{state}" + ("" if problem is None else f": {problem}"))
    return 1 if any(problem for _, _, problem in results) else 0
