"""Only the person whose memories these are may read them: the data folder is ``0700`` and every
file MemDesk keeps in it ``0600``.

Files are created by many hands (SQLite and its WAL, llama.cpp's KV cache in the model's process,
the log handler, downloads, exports), so the entry points run under a private umask, which every
child process inherits; the store and the data folder also get explicit modes, and a folder left
readable by an older MemDesk is fixed at start.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

PRIVATE_UMASK = 0o077
FOLDER_MODE = 0o700
FILE_MODE = 0o600

log = logging.getLogger("memdesk.files")


@contextlib.contextmanager
def private_umask() -> Iterator[None]:
    """Files and folders created meanwhile, by this process or its children, are its user's only.
    Exports the user saves wherever they choose are ``0600`` too."""
    previous = os.umask(PRIVATE_UMASK)
    try:
        yield
    finally:
        os.umask(previous)


def make_private(path: Path) -> None:
    """``path`` to FOLDER_MODE or FILE_MODE, when it exists and is not so already. A symlink is
    left alone: chmod would change what it points to, which is not MemDesk's."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        wanted = FOLDER_MODE
    elif stat.S_ISREG(info.st_mode):
        wanted = FILE_MODE
    else:
        return
    if stat.S_IMODE(info.st_mode) == wanted:
        return
    try:
        os.chmod(path, wanted)
    except OSError as error:  # not ours, or read-only: opening the store says what matters
        log.warning("could not make %s private: %s", path, error)


def make_trees_private(paths: Iterable[Path]) -> None:
    """Each of ``paths`` and, for a folder, everything below it (symlinks are not followed)."""
    for top in paths:
        make_private(top)
        if not top.is_dir() or top.is_symlink():
            continue
        for folder, subfolders, files in os.walk(top):
            for name in (*subfolders, *files):
                make_private(Path(folder) / name)
