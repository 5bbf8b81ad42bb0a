"""What a crashed test worker was doing, at the end of the run's report.

A worker that dies of a signal (a segmentation fault in native code) prints Python's fault
report to its stderr, which a long run's log buries or cuts; the test it died in is named by
pytest-xdist, but not where in the code. Each worker also writes that report to a file of its
own, and the controller prints the crashed thread's part of it in the terminal summary."""

from __future__ import annotations

import faulthandler
import os
import tempfile
from pathlib import Path

_REPORT = None  # the open file of this worker's report: it must stay open until the process ends


def _folder(controller_pid: int) -> Path:
    return Path(tempfile.gettempdir()) / f"memdesk-test-crashes-{controller_pid}"


def pytest_sessionstart(session) -> None:
    global _REPORT
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return
    folder = _folder(os.getppid())
    folder.mkdir(exist_ok=True)
    _REPORT = open(folder / f"{worker}.txt", "w")  # noqa: SIM115 - kept open for faulthandler
    faulthandler.enable(file=_REPORT, all_threads=True)


def pytest_terminal_summary(terminalreporter) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") is not None:
        return
    folder = _folder(os.getpid())
    if not folder.is_dir():
        return
    for report in sorted(folder.glob("*.txt")):
        text = report.read_text(errors="replace")
        if "Fatal Python error" in text:
            lines = text.splitlines()
            start = next((n for n, line in enumerate(lines) if line.startswith("Current thread")), 0)
            crashed = lines[start : start + 60]
            crashed += [line for line in lines[start + 60 :] if line.startswith("Extension modules")]
            terminalreporter.write_sep("=", f"worker {report.stem} crashed")
            terminalreporter.write_line("\n".join([lines[0], *crashed]))
        report.unlink()
    folder.rmdir()
