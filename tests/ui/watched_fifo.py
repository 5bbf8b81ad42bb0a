"""A file that tells whether it was opened: a FIFO whose every open by a reader a helper process
counts (it opens the write end without blocking, which succeeds only while a reader waits), so a
test can show that rendering text did not read the file it names, without hanging if it did."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_COUNTER = r"""
import os, sys, time
fifo, marks, stop = sys.argv[1:4]
end = time.monotonic() + 120
while time.monotonic() < end and not os.path.exists(stop):
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        time.sleep(0.002)
        continue
    with open(marks, "a") as out:
        out.write("x")
    os.close(fd)
"""


class WatchedFile:
    def __init__(self, path: Path, marks: Path) -> None:
        self.path = path
        self._marks = marks

    @property
    def opened(self) -> int:
        """How many times a reader opened it so far."""
        return len(self._marks.read_text()) if self._marks.exists() else 0


@contextmanager
def watched_fifo(folder: Path, name: str = "evidence.png") -> Iterator[WatchedFile]:
    """A FIFO at ``folder/name``, its opens counted while the block runs; removed afterwards, so a
    later open fails instead of blocking."""
    path, marks, stop = folder / name, folder / f"{name}.opened", folder / f"{name}.stop"
    os.mkfifo(path)
    counter = subprocess.Popen([sys.executable, "-c", _COUNTER, str(path), str(marks), str(stop)])
    try:
        yield WatchedFile(path, marks)
    finally:
        stop.touch()
        counter.wait(timeout=30)
        path.unlink()
