"""``memdesk backup``: the store's snapshots (see memdesk/core/storage/backup.py).

    memdesk backup [list] [--json]
    memdesk backup create [--json]
    memdesk backup restore ID [--json]
    memdesk backup verify [ID] [--json]

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
from memdesk.core.base.errors import StoreError
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
    restore.set_defaults(handler=_restore)
    verify = actions.add_parser("verify", help="check a snapshot, or all of them, with SQLite's integrity check")
    verify.add_argument("id", nargs="?", metavar="ID", help="the snapshot (default: every one)")
    verify.set_defaults(handler=_verify)
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


def _row(snapshot: Snapshot) -> str:
    state = "verified" if snapshot.verified else "DAMAGED"
    kept = "  (kept)" if snapshot.kind == "kept" else ""
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
            print(_row(snapshot))
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
        progress = _Progress("Restoring")
        try:
            undo = backups.restore(snapshot.id, progress=progress)
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


def _verify(args: argparse.Namespace) -> int:
    backups = open_backups()
    targets = [backups.get(args.id)] if args.id else backups.list()
    results: list[tuple[Snapshot, str | None]] = []
    for snapshot in targets:
        try:
            results.append((backups.verify(snapshot.id), None))
        except StoreError as error:
            results.append((snapshot, error.message))
    if args.json:
        print(
            json.dumps(
                [{**s.as_json(), "verified": problem is None, "problem": problem} for s, problem in results], indent=2
            )
        )
    elif not results:
        print(f"No snapshots yet in {backups.folder}.")
    else:
        for snapshot, problem in results:
            print(f"{snapshot.id}\t{_when(snapshot)}\t" + ("ok" if problem is None else f"DAMAGED: {problem}"))
    return 1 if any(problem for _, problem in results) else 0
