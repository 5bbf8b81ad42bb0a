"""Programs the tests and benchmarks start: they end with the process that started them, every wait
on them is bounded, and each is ended however its test ends.

A fixture's finalizer stops what its test started, failure or not; but a worker that dies first
(a segfault, pytest-timeout's ``os._exit``, a SIGKILL from CI) runs no finalizer, and a daemon
started in a session of its own would outlive it and hold the runner's job open. On Linux
``PR_SET_PDEATHSIG`` has the kernel send SIGKILL to the child the moment its parent thread is
gone; elsewhere the finalizers are all there is.

    subprocess.Popen(argv, preexec_fn=die_with_parent)

A test that waits on a child with no bound (a ``readline`` on its output, ``asyncio.run`` of a
client session, ``poll`` in a loop) hangs the whole run when the child misbehaves. So: read a
line within a deadline (``Lines``), run a client session within a deadline (``within``), and end
the child however the block ends (``ended``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Coroutine, Iterator
from typing import IO, Any, TypeVar

T = TypeVar("T")

PR_SET_PDEATHSIG = 1
#: How long a child gets to end after SIGTERM before it is killed.
END_S = 10.0


def die_with_parent() -> None:
    """Runs in the child between fork and exec (``preexec_fn``): only async-signal-safe work."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def end(process: subprocess.Popen) -> None:
    """Close what we hold of its pipes, then terminate; kill if it does not end in time."""
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.close()
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=END_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=END_S)


@contextlib.contextmanager
def ended(process: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """``with ended(Popen(...)) as child:`` the child is ended when the block ends, failed or not."""
    try:
        yield process
    finally:
        end(process)


class Lines:
    """The lines a child writes to ``stream``, read by a thread of their own, so that a test can
    wait for the next one with a deadline (``next(seconds)``) instead of a ``readline`` that
    never returns when the child never answers."""

    def __init__(self, stream: IO[str]) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(stream,), name="child-lines", daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        with contextlib.suppress(OSError, ValueError):  # the stream was closed under us: the child is ended
            for line in stream:
                self._lines.put(line)
        self._lines.put(None)

    def next(self, seconds: float) -> str:
        """The next line; TimeoutError if none came within ``seconds``, EOFError if the output ended."""
        try:
            line = self._lines.get(timeout=seconds)
        except queue.Empty:
            raise TimeoutError(f"the child wrote no line within {seconds:g} s") from None
        if line is None:
            self._lines.put(None)  # later calls see the end too
            raise EOFError("the child's output ended")
        return line


def within(seconds: float, work: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(work)``, cancelled (its clients' sessions and their children closed) after
    ``seconds``: TimeoutError then."""
    return asyncio.run(asyncio.wait_for(work, timeout=seconds))
