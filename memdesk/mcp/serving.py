"""What the running app serves to other apps while it runs, from its settings: the encrypted
store's passphrase on the private handover socket (app/handover.py), and loopback HTTP when the
user turned ``mcp_http`` on. Nothing listens otherwise. The window (and the terminal chat) start
one ``Serving`` and tell it when the settings change.

HTTP is served by a child process (``memdesk mcp --http``), not by threads of the window: a
search holds Python's interpreter lock for much of its work, and in the window's process every
client's search would make the window's own timers late. The child runs at a lower CPU priority:
on two cores a client searching back to back would otherwise take the window's share. The child opens the store as any
``memdesk mcp`` does (an encrypted one through the handover socket this object serves), writes
what it logs to ``logs/mcp-http.log``, and ends with the app or when the setting is turned off:
it watches the pipe on its standard input, which the system closes when the app ends, however
it ends (a crash or a kill cannot leave a server holding the port and the store).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from memdesk.app.handover import HandoverServer
from memdesk.core.base.errors import MemDeskError
from memdesk.core.base.paths import HOME_ENV, Paths
from memdesk.core.base.settings_table import Settings

log = logging.getLogger("memdesk.mcp")

LOOPBACK = "127.0.0.1"
#: How long the child may take to listen (it imports the SDK and opens the store; a loaded machine).
START_S = 120.0
STOP_S = 10.0


def server_command(port: int) -> list[str]:
    """``memdesk mcp --http --port PORT`` as this installation runs it (a frozen bundle is
    ``memdesk`` itself: packaging/entry.py hands its arguments to the command line)."""
    base = [sys.executable] if getattr(sys, "frozen", False) else [sys.executable, "-m", "memdesk.cli.main"]
    return [*base, "mcp", "--http", "--port", str(port), "--low-priority", "--end-with-parent"]


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((LOOPBACK, port)) == 0


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


class Serving:
    def __init__(self, paths: Paths, key: str | None) -> None:
        self._paths = paths
        self._handover = HandoverServer(paths, key) if key is not None else None
        self._child: subprocess.Popen | None = None
        self._port: int | None = None

    @property
    def url(self) -> str | None:
        """The loopback URL served now (None: HTTP is off)."""
        return f"http://{LOOPBACK}:{self._port}/mcp" if self._child is not None else None

    def follow(self, settings: Settings) -> None:
        """Serve HTTP as ``settings`` say: start, stop, or move to another port."""
        wanted = settings.mcp_http_port if settings.mcp_http else None
        if self._child is not None and self._child.poll() is not None:
            self._child = self._port = None  # it ended on its own: start it again if wanted
        if wanted == self._port:
            return
        self._stop_http()
        if wanted is not None:
            self._start_http(wanted)

    def _start_http(self, port: int) -> None:
        if _listening(port):
            raise MemDeskError(
                f"Could not serve MCP on {LOOPBACK}:{port}: another program listens there",
                hint="choose another mcp_http_port",
            )
        self._paths.logs.mkdir(parents=True, exist_ok=True)
        log_path = self._paths.logs / "mcp-http.log"
        with open(log_path, "a", encoding="utf-8") as log_file:
            child = subprocess.Popen(
                server_command(port),
                env={**os.environ, HOME_ENV: str(self._paths.home)},
                # The child stops when this pipe ends: when we close it, or when this process ends
                # in any way (a crash, a kill) and the system closes it for us.
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=log_file,
            )
        deadline = time.monotonic() + START_S
        while not _listening(port):
            if child.poll() is not None or time.monotonic() > deadline:
                self._end(child)
                said = _last_line(log_path)
                raise MemDeskError(
                    f"Could not serve MCP on {LOOPBACK}:{port}" + (f": {said}" if said else ""),
                    hint=f"see {log_path}",
                )
            time.sleep(0.1)
        self._child, self._port = child, port
        log.info("serving MCP on %s", self.url)

    @staticmethod
    def _end(child: subprocess.Popen) -> None:
        if child.stdin is not None:
            with contextlib.suppress(OSError):
                child.stdin.close()
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(timeout=STOP_S)

    def _stop_http(self) -> None:
        if self._child is not None:
            self._end(self._child)
        self._child = self._port = None

    def close(self) -> None:
        self._stop_http()
        if self._handover is not None:
            with contextlib.suppress(Exception):
                self._handover.close()
            self._handover = None
