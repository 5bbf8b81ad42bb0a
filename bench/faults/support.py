"""What the fault campaigns share: their progress lines and how they start and kill a child."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_T0 = time.monotonic()


def progress(text: str) -> None:
    """A line on stderr per step, so a run that is stopped from outside shows where it was."""
    print(f"[faults {time.monotonic() - _T0:7.1f} s] {text}", file=sys.stderr, flush=True)


def child(name: str, *args: str) -> list[str]:
    """The command line of one of testing/fault_children's programs."""
    return [sys.executable, "-m", f"testing.fault_children.{name}", *args]


def child_env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MEMDESK_HOME": str(home),
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "QT_QPA_PLATFORM": "offscreen",
    }


def kill_after(process: subprocess.Popen, delay: float) -> None:
    time.sleep(delay)
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
