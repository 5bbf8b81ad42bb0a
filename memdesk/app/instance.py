"""One MemDesk window or terminal chat per data folder.

Two of them on one store would each run the agent, its background work and a model: the second
waited out SQLite's busy timeout and failed. The one running holds an exclusive lock (``flock``; on
Windows a byte-range lock) on a lock file in the data folder, with its process id and program
written in it, so a second start fails at once and says who holds it. The kernel drops the lock when
its process ends, however it ends (kill -9 included), so a stale file never blocks a start; it is
never deleted, because deleting a lock file lets two processes lock two different files.

Other commands (memory, agents, settings, doctor, eval, ingest...) do not take the lock: they are
short or built to share the store (WAL), and keep working while the window runs.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from memdesk.core.base.errors import AlreadyRunningError, InstanceLockError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: a byte-range lock instead (msvcrt), dropped with its handle
    fcntl = None  # type: ignore[assignment]
    import msvcrt

#: Never through a symbolic link: the lock file is truncated and written, and a link planted in its
#: place would have MemDesk overwrite whatever it points to (0 where the platform has no such flag).
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)

#: Where Windows' byte-range lock sits: past the holder's JSON, which a locked range would make
#: unreadable to the second start that wants to name the holder.
_WINDOWS_LOCKED_BYTE = 1 << 20

WINDOW = "the MemDesk window"
TERMINAL_CHAT = "memdesk chat"


class InstanceLock:
    """Held while one window or terminal chat uses the data folder. Use as a context manager, or
    ``acquire()`` then ``release()``."""

    def __init__(self, path: Path, program: str) -> None:
        self.path = path
        self.program = program
        self._descriptor: int | None = None

    def acquire(self) -> InstanceLock:
        """Take the lock, or raise AlreadyRunningError naming the process that holds it."""
        if self._descriptor is not None:
            return self
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Not inherited by child processes (Python's default), so a model process left behind by a
        # killed parent does not keep holding it.
        descriptor = _open_own_file(self.path, os.O_RDWR | os.O_CREAT)
        try:
            locked = _try_lock(descriptor)
        except BaseException:
            os.close(descriptor)
            raise
        if not locked:
            holder = _read_holder(descriptor)
            os.close(descriptor)
            raise _already_running(self.path.parent, holder)
        os.ftruncate(descriptor, 0)
        os.lseek(descriptor, 0, os.SEEK_SET)
        os.write(
            descriptor,
            json.dumps({"pid": os.getpid(), "program": self.program}).encode("utf-8"),
        )
        self._descriptor = descriptor
        return self

    def release(self) -> None:
        if self._descriptor is None:
            return
        descriptor, self._descriptor = self._descriptor, None
        os.ftruncate(descriptor, 0)  # nobody holds it now: nobody is named
        if fcntl is None:
            os.lseek(descriptor, _WINDOWS_LOCKED_BYTE, os.SEEK_SET)
            msvcrt.locking(descriptor, msvcrt.LK_UNLCK, 1)
        os.close(descriptor)  # closing the last descriptor drops the lock

    @property
    def held(self) -> bool:
        return self._descriptor is not None

    def __enter__(self) -> InstanceLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _open_own_file(path: Path, flags: int) -> int:
    """``path`` opened without following a symbolic link, and only when it is a regular file with
    no other name (a hard link to another file would be written through as well)."""
    try:
        descriptor = os.open(path, flags | _NO_FOLLOW, 0o600)
    except OSError as error:
        if os.path.islink(path):
            raise _not_own_file(path, "is a symbolic link") from error
        raise
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(descriptor)
        raise _not_own_file(
            path, "is not a regular file" if not stat.S_ISREG(info.st_mode) else "has another name (a hard link)"
        )
    return descriptor


def _not_own_file(path: Path, what: str) -> InstanceLockError:
    return InstanceLockError(
        f"MemDesk's lock file {path} {what}; MemDesk does not write through it",
        hint=f"remove {path} (MemDesk makes a new one), then start MemDesk again",
    )


def _try_lock(descriptor: int) -> bool:
    """Take the exclusive lock without waiting; False when another process (or handle) has it."""
    if fcntl is not None:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
    os.lseek(descriptor, _WINDOWS_LOCKED_BYTE, os.SEEK_SET)
    try:
        msvcrt.locking(descriptor, msvcrt.LK_NBLCK, 1)
    except OSError:
        return False
    return True


def _read_holder(descriptor: int) -> dict:
    try:
        os.lseek(descriptor, 0, os.SEEK_SET)
        holder = json.loads(os.read(descriptor, 4096) or b"{}")
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _already_running(home: Path, holder: dict) -> AlreadyRunningError:
    pid = holder.get("pid") if isinstance(holder.get("pid"), int) else None
    program = str(holder.get("program") or "another MemDesk")
    who = f"{program} (process {pid})" if pid is not None else program
    return AlreadyRunningError(
        f"MemDesk is already running on the data folder {home}: {who}",
        hint="use that one, or close it first; MEMDESK_HOME picks another data folder",
        pid=pid,
        program=program,
    )


def ask_to_come_forward(request: Path) -> None:
    """Ask the running window to come forward (it watches the data folder for this file)."""
    try:
        # A new file only (O_EXCL never follows a link): one already there is a request that
        # waits, or something planted that must not be written through.
        fd = os.open(request, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, 0o600)
    except OSError:  # only a convenience: the message box still says what is going on
        return
    try:
        os.write(fd, str(os.getpid()).encode("ascii"))
    except OSError:
        pass
    finally:
        os.close(fd)


def take_come_forward_request(request: Path) -> bool:
    """Whether a second start asked this window to come forward (the request is used up)."""
    try:
        request.unlink()
    except FileNotFoundError:
        return False
    except OSError:
        return False
    return True
