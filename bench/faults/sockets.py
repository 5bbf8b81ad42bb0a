"""A default run of the CLI and of the window (offscreen) opens 0 network sockets."""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.faults.support import progress
from testing.real_app import AppRun, RealApp


def run(timeout: float = 600.0) -> dict:
    """A default run of the terminal chat and of the window (offscreen), one after the other in one
    home, with every Python process of each (children included) recording each network socket it
    creates and every connect, bind, send and name lookup (testing/real_app.py, testing/socket_audit.py)."""
    with tempfile.TemporaryDirectory(prefix="memdesk-faults-") as folder:
        app = RealApp(Path(folder), audit=True)
        progress("sockets: cli run")
        cli = app.chat(["Hello!"], timeout=timeout)
        progress("sockets: gui run")
        gui = app.window("Hello!", timeout=timeout)  # gives up on its own before the timeout, saying why
        return report({"cli": cli, "gui": gui})


def report(runs: dict[str, AppRun]) -> dict:
    """The campaign's figures from its audited runs: met when each exited 0 and none used the network."""
    events = [event for run in runs.values() for event in run.network_events]
    for name, run in runs.items():
        if run.returncode != 0:
            progress(f"sockets: {name} exited {run.returncode}: {(run.stdout + run.stderr)[-600:]}")
    return {
        "runs_exit_codes": {name: run.returncode for name, run in runs.items()},
        "network_socket_events": len(events),
        "events": events[:5],
        "ok": not events and all(run.returncode == 0 for run in runs.values()),
    }
