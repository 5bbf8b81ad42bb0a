"""The sync folder's layout, and writing into it so that no reader ever sees half a file.

    FOLDER/memdesk-sync.json           the group's id (not secret) and the format
    FOLDER/group.mds                   opens only with the pairing code's key: tells a wrong code
    FOLDER/devices/ID/device.mds       a device's name and public key (it joined)
    FOLDER/devices/ID/0000000001.mds   its change files, numbered from 1, never rewritten
    FOLDER/devices/ID/acks.mds         how far it has applied every device's files (compaction)
    FOLDER/devices/ID/snapshot.mds     its whole synced state, for a device that joins late
    FOLDER/revoked/ID.mds              a device removed from the group

A file is written beside its name, flushed to disk and renamed over it: the engines that carry
the folder (Syncthing, a cloud drive) and the other devices see the whole file or none.
"""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

from memdesk.core.base.errors import SyncError

MARKER = "memdesk-sync.json"
LOG_NAME = re.compile(r"^(\d{10})\.mds$")
DEVICE_ID = re.compile(r"^[0-9a-f]{32}$")
#: Temporary files of ours and Syncthing's: never carried (Syncthing reads .stignore).
IGNORES = "(?d).tmp-*\n(?d).syncthing.*\n"


class SyncFolder:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    # --- layout ----------------------------------------------------------------------------
    def device_dir(self, device_id: str) -> Path:
        return self.root / "devices" / device_id

    def log_path(self, device_id: str, seq: int) -> Path:
        return self.device_dir(device_id) / f"{seq:010d}.mds"

    def announcement(self, device_id: str) -> Path:
        return self.device_dir(device_id) / "device.mds"

    def acks_path(self, device_id: str) -> Path:
        return self.device_dir(device_id) / "acks.mds"

    def snapshot_path(self, device_id: str) -> Path:
        return self.device_dir(device_id) / "snapshot.mds"

    def revoked_path(self, device_id: str) -> Path:
        return self.root / "revoked" / f"{device_id}.mds"

    # --- reading ---------------------------------------------------------------------------
    def group_id(self) -> str | None:
        try:
            data = json.loads((self.root / MARKER).read_text(encoding="utf-8"))
            return str(data["group"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError) as error:
            raise SyncError(f"{self.root / MARKER} is damaged: {error}", hint="pick the sync folder again") from None

    def devices(self) -> list[str]:
        base = self.root / "devices"
        if not base.is_dir():
            return []
        return sorted(p.name for p in base.iterdir() if p.is_dir() and DEVICE_ID.match(p.name))

    def revoked(self) -> list[str]:
        base = self.root / "revoked"
        if not base.is_dir():
            return []
        return sorted(p.stem for p in base.glob("*.mds") if DEVICE_ID.match(p.stem))

    def log_numbers(self, device_id: str) -> list[int]:
        folder = self.device_dir(device_id)
        if not folder.is_dir():
            return []
        return sorted(int(m.group(1)) for p in folder.iterdir() if (m := LOG_NAME.match(p.name)))

    def read(self, path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise SyncError(
                f"Cannot read {path}: {error.strerror}", hint="check the sync folder's permissions"
            ) from None

    # --- writing ---------------------------------------------------------------------------
    def create(self, group_id: str) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.write(self.root / MARKER, json.dumps({"group": group_id, "format": 1}).encode() + b"\n")
        self.write_ignores()

    def write_ignores(self) -> None:
        ignores = self.root / ".stignore"
        if not ignores.exists():
            self.write(ignores, IGNORES.encode())

    def write(self, path: Path, data: bytes, *, replace: bool = True) -> bool:
        """Write ``data`` at ``path`` whole or not at all; with ``replace`` False an existing file
        is kept (a numbered change file is never rewritten). Returns whether it wrote."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not replace and path.exists():
                return False
            temporary = path.with_name(f".tmp-{path.name}-{os.getpid()}")
            with open(temporary, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            if replace:
                os.replace(temporary, path)
            else:
                try:
                    os.link(temporary, path)  # fails if another writer got there first
                finally:
                    temporary.unlink()
            _sync_dir(path.parent)
            return True
        except FileExistsError:
            return False
        except OSError as error:
            with_temporary_removed(path)
            raise folder_error(error, path) from None

    def remove_stale_temporaries(self, device_id: str) -> int:
        """Drop half-written files a killed MemDesk left in this device's place (their writer's
        process is gone); returns how many."""
        removed = 0
        folder = self.device_dir(device_id)
        for path in folder.glob(".tmp-*") if folder.is_dir() else ():
            pid = path.name.rsplit("-", 1)[-1]
            if pid.isdigit() and not _alive(int(pid)):
                path.unlink(missing_ok=True)
                removed += 1
        return removed

    def remove(self, path: Path) -> None:
        try:
            path.unlink(missing_ok=True)
        except OSError as error:
            raise folder_error(error, path) from None


def with_temporary_removed(path: Path) -> None:
    try:
        path.with_name(f".tmp-{path.name}-{os.getpid()}").unlink(missing_ok=True)
    except OSError:
        pass


def folder_error(error: OSError, path: Path) -> SyncError:
    if error.errno == errno.ENOSPC or error.errno == errno.EDQUOT:
        return SyncError(
            f"The sync folder's disk is full: could not write {path.name}",
            hint="free some space there; nothing was lost, the changes are sent at the next sync",
        )
    if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return SyncError(
            f"The sync folder {path.parent} cannot be written ({error.strerror})",
            hint="make it writable for your user; nothing was lost, the changes are sent at the next sync",
        )
    return SyncError(f"Could not write {path}: {error.strerror}", hint="check the sync folder")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sync_dir(folder: Path) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
