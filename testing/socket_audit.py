"""The socket audit: which network sockets a run of MemDesk opens (none, unless the user asks).

Python's audit hooks (``sys.addaudithook``) see every socket call made through the ``socket``
module, whatever library makes it; they do not see native code that bypasses Python (llama.cpp,
Qt), and neither has networking in MemDesk's build or use. One hook, used two ways:
- ``SocketAudit``: in the current process, switched on and off (hooks cannot be removed);
- in every Python process of a real run, children included: put ``SITE`` first on PYTHONPATH (its
  ``sitecustomize`` calls ``install_from_environment``) and name a log file in ``LOG_ENV``. Each
  process writes ``PID start ARGV`` and a ``PID NETWORK ...`` line per network event.
The fault campaign's ``sockets`` and the tests' real-app audits both run that way.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

LOG_ENV = "MEMDESK_SOCKET_AUDIT"
SITE = Path(__file__).resolve().parent / "socket_audit_site"
NETWORK_EVENTS = (
    "socket.connect",
    "socket.bind",
    "socket.sendto",
    "socket.sendmsg",
    "socket.getaddrinfo",
    "socket.gethostbyname",
)
NETWORK = "NETWORK"
_INET = (socket.AF_INET, socket.AF_INET6)


def network_event(event: str, args: tuple) -> str | None:
    """How the log names ``event`` when it is network use: an internet socket made, connected,
    bound or sent from, or a name looked up; None for anything else (a local socket's calls)."""
    if event == "socket.__new__":
        return f"{event} family={args[1]}" if args[1] in (*_INET, -1) else None  # -1: the default family, AF_INET
    if event not in NETWORK_EVENTS:
        return None
    if event.startswith("socket.get"):
        return f"{event} {args!r}"
    return f"{event} {args[1:]!r}" if getattr(args[0], "family", None) in _INET else None


class SocketAudit:
    """Records network events while recording (``with audit: ...``), in this process."""

    def __init__(self) -> None:
        self.recording = False
        self.events: list[str] = []
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        if self.recording:
            found = network_event(event, args)
            if found is not None:
                self.events.append(found)

    def __enter__(self) -> SocketAudit:
        self.events.clear()
        self.recording = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.recording = False


def install_from_environment() -> None:
    """With ``LOG_ENV`` set, log this process's start and every network event it makes."""
    log = os.environ.get(LOG_ENV)
    if not log:
        return

    def write(line: str) -> None:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {line}\n")

    def hook(event: str, args: tuple) -> None:
        found = network_event(event, args)
        if found is not None:
            write(f"{NETWORK} {found}")

    write("start " + " ".join(sys.argv))
    sys.addaudithook(hook)


def audit_environment(log: Path, environ: dict[str, str]) -> dict[str, str]:
    """``environ`` for a run whose every Python process is audited into ``log``."""
    path = os.pathsep.join(p for p in (str(SITE), environ.get("PYTHONPATH", "")) if p)
    return {**environ, "PYTHONPATH": path, LOG_ENV: str(log)}


def network_lines(log: Path) -> list[str]:
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return [line for line in lines if f" {NETWORK} " in line]


def started(log: Path) -> dict[str, str]:
    """The audited processes: their argv by pid."""
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return {line.split(" ", 1)[0]: line.split(" ", 2)[2] for line in lines if line.split(" ", 2)[1] == "start"}
