"""What a MemDesk process holds stays in it: no core file, and nothing readable through /proc.

A MemDesk process holds secrets (an encrypted store's passphrase, the key derived from it, a
Hugging Face token in its environment, the store's open descriptor) and starts imported tools'
code, which runs as the same user. Such a process could read ``/proc/<ppid>/environ``,
``/proc/<ppid>/fd`` and, where ptrace is allowed, ``/proc/<ppid>/mem``. A process that is not
*dumpable* (``prctl(PR_SET_DUMPABLE, 0)``) keeps those to itself and to root, refuses ptrace from
other processes of the user, and leaves no core file; ``RLIMIT_CORE`` 0, which its children
inherit, stops core files where the flag does not reach (the model's process before it guards
itself, and systems where a non-dumpable process still dumps to a root-only file).

The flag does not survive ``exec``: every MemDesk process (the window, each terminal command, the
model's and the download's child processes) calls ``guard_process`` itself, first thing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys

log = logging.getLogger("memdesk.process")

PR_SET_DUMPABLE, PR_GET_DUMPABLE = 4, 3


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:  # pragma: no cover - every Linux has a C library
        return None


def guard_process() -> None:
    """No core dumps, not dumpable (Linux; elsewhere the core limit only). Never fails: a process
    that cannot guard itself still runs, and says so in the log."""
    try:
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
        resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
    except (ImportError, ValueError, OSError) as error:  # Windows has no resource module
        log.debug("core file limit unchanged: %s", error)
    libc = _libc()
    if libc is not None and libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        log.warning("could not make this process undumpable (errno %d)", ctypes.get_errno())


def is_guarded() -> bool:
    """Whether this process is not dumpable (always False where the flag does not exist)."""
    libc = _libc()
    return libc is not None and libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0
