"""Turn a child process's death into a cause and a fix a person can act on."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

#: A source checkout has the Makefile that rebuilds llama.cpp; an installed MemDesk does not.
_CHECKOUT = Path(__file__).resolve().parent.parent.parent

# Windows reports a native crash as an NTSTATUS exit code instead of a signal.
_WINDOWS_ACCESS_VIOLATION = 0xC0000005
_WINDOWS_ILLEGAL_INSTRUCTION = 0xC000001D


def rebuild_portable() -> str:
    """The command that puts a CPU-portable llama.cpp in place, for this kind of install."""
    if getattr(sys, "frozen", False):
        return "install the portable MemDesk bundle for this platform"
    if (_CHECKOUT / "Makefile").is_file() and (_CHECKOUT / "scripts" / "llama-wheel").is_file():
        return "rebuild portable: make clean-venv && make install"
    return (
        "reinstall llama-cpp-python portable: scripts/llama-wheel PIP 0.3.36 (see docs/install.md, 'Install with pip')"
    )


def signal_name(exitcode: int) -> str:
    try:
        return signal.Signals(-exitcode).name
    except ValueError:
        return f"signal {-exitcode}"


def explain_exit(exitcode: int | None, *, native_build: bool = False) -> tuple[str, str]:
    """(cause, fix) for a model process that died with ``exitcode`` (negative: a signal)."""
    code = exitcode if exitcode is None or exitcode >= 0 else -exitcode
    if exitcode is None:
        return "it did not stop when asked", "restart MemDesk"
    unsigned = exitcode & 0xFFFFFFFF
    if (exitcode < 0 and code == getattr(signal, "SIGSEGV", 11)) or unsigned == _WINDOWS_ACCESS_VIOLATION:
        who = "a native llama.cpp build (on CPUs with AMX its matrix path crashes)" if native_build else "llama.cpp"
        return f"it crashed with a segmentation fault (SIGSEGV) inside {who}", rebuild_portable()
    if (exitcode < 0 and code == getattr(signal, "SIGILL", 4)) or unsigned == _WINDOWS_ILLEGAL_INSTRUCTION:
        return (
            "it hit an illegal instruction (SIGILL): llama.cpp was compiled for CPU features this CPU lacks",
            rebuild_portable(),
        )
    if exitcode < 0 and code == getattr(signal, "SIGABRT", 6):
        return (
            "llama.cpp aborted on a failed internal check (SIGABRT)",
            "the model file may be damaged or of an unsupported kind: pick another model",
        )
    if exitcode < 0 and code == getattr(signal, "SIGKILL", 9):
        return (
            "the system killed it (SIGKILL), most likely for lack of memory",
            "close other programs, or pick a smaller model or context size",
        )
    if exitcode < 0 and code == getattr(signal, "SIGBUS", 7):
        return (
            "a bus error (SIGBUS): the model file changed or could not be read while in use",
            "copy the model file again",
        )
    if exitcode < 0:
        return f"it was killed by {signal_name(exitcode)}", "run it again; if it repeats, " + rebuild_portable()
    return f"it exited with code {exitcode}", "run `memdesk doctor` again; if it repeats, " + rebuild_portable()
