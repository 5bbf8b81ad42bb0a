"""Programs the tests and benchmarks start end with the process that started them.

A fixture's finalizer stops what its test started, failure or not; but a worker that dies first
(a segfault, pytest-timeout's ``os._exit``, a SIGKILL from CI) runs no finalizer, and a daemon
started in a session of its own would outlive it and hold the runner's job open. On Linux
``PR_SET_PDEATHSIG`` has the kernel send SIGKILL to the child the moment its parent thread is
gone; elsewhere the finalizers are all there is.

    subprocess.Popen(argv, preexec_fn=die_with_parent)
"""

from __future__ import annotations

import ctypes
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Runs in the child between fork and exec (``preexec_fn``): only async-signal-safe work."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
