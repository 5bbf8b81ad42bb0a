"""Running a benchmark's inner part in the real app under Xvfb (a real X server, not offscreen):
``python -m MODULE --inner ...`` in a fresh home, its one JSON line read back after a marker."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def xvfb_run() -> str:
    found = shutil.which("xvfb-run")
    if found is None:
        raise SystemExit("xvfb-run is missing: install the Debian package xvfb (make system-deps does)")
    return found


def fresh_home(prefix: str) -> tuple[str, dict[str, str]]:
    """A new MemDesk home and the environment that uses it, offline, on the X server."""
    home = tempfile.mkdtemp(prefix=prefix)
    env = {**os.environ, "MEMDESK_HOME": home, "HF_HUB_OFFLINE": "1"}
    env.pop("QT_QPA_PLATFORM", None)  # a real X server
    return home, env


def run_inner(
    module: str, args: list[str], *, screen: tuple[int, int], env: dict[str, str], marker: str, timeout: float
) -> tuple[dict | None, str]:
    """The inner run's JSON (None when it printed none) and the tail of what it printed."""
    command = [
        xvfb_run(),
        "-a",
        "-s",
        f"-screen 0 {screen[0]}x{screen[1]}x24",
        sys.executable,
        "-m",
        module,
        "--inner",
        *args,
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    line = next((out for out in done.stdout.splitlines() if out.startswith(marker)), None)
    return (json.loads(line[len(marker) :]) if line is not None else None), (done.stdout + done.stderr)[-2000:]
