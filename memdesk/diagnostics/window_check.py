"""The doctor's window check: whether Qt's platform plugin starts here. The system's libraries
and display are looked at first; Qt itself starts in a child process (a plugin that cannot
start aborts its process)."""

from __future__ import annotations

import os
import sys

from memdesk.diagnostics import system_libs
from memdesk.diagnostics.child import run_in_child
from memdesk.diagnostics.crash import signal_name
from memdesk.diagnostics.report import Check

HEADLESS_PLATFORMS = ("offscreen", "minimal", "vnc")


def check_window(probe: tuple[str, str]) -> Check:
    """``probe``: the (module, function) that starts Qt in the child and reports what it found."""
    requested = os.environ.get("QT_QPA_PLATFORM", "").split(":")[0].split(";")[0]
    headless = requested in HEADLESS_PLATFORMS
    if sys.platform.startswith("linux") and not headless:
        display, wayland = os.environ.get("DISPLAY"), os.environ.get("WAYLAND_DISPLAY")
        if requested == "xcb" or (not requested and not wayland):
            missing = system_libs.missing_libraries()
            if missing:
                packages = " ".join(sorted({system_libs.debian_package(name) for name in missing}))
                return Check(
                    "window",
                    False,
                    f"Qt's xcb platform plugin cannot load: this system lacks {' '.join(missing)}",
                    f"make system-deps (or: sudo apt-get install {packages})",
                )
        if not display and not wayland:
            return Check(
                "window",
                False,
                "no display: DISPLAY and WAYLAND_DISPLAY are unset, so the window cannot open",
                "start MemDesk from a desktop session (or use `memdesk chat` in this terminal;"
                " QT_QPA_PLATFORM=offscreen runs the window headless)",
            )
    module, function = probe
    result = run_in_child(module, function, timeout=60)
    if not result.finished or not result.items:
        if result.error is not None:
            return Check(
                "window",
                False,
                f"Qt failed to start: {result.error[0]}: {result.error[1]}",
                "reinstall PySide6 (make install)",
            )
        said = _qt_complaint(result.stderr)
        code = result.exitcode
        how = (
            "timed out"
            if result.timed_out
            else signal_name(code)
            if code is not None and code < 0
            else f"exit code {code}"
        )
        return Check(
            "window",
            False,
            f"Qt's platform plugin {requested or '(default)'} could not start ({how}){': ' + said if said else ''}",
            "make system-deps, and check DISPLAY (or run `memdesk chat` in a terminal)",
        )
    info = result.items[0]
    where = " (headless: no window will be visible)" if headless else ""
    return Check(
        "window",
        True,
        f"Qt {info['qt']}, platform plugin {info['platform']}, {info['screens']} screen(s)"
        f" {info['size']}{where}".rstrip(),
    )


def _qt_complaint(stderr: str) -> str:
    """Qt's own explanation from a failed start: its qpa lines say what is wrong."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    useful = [line for line in lines if line.startswith("qt.qpa") or "could not" in line.lower()]
    return (useful or lines or [""])[0][:300]
