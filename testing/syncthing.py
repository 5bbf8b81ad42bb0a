"""Two real Syncthing daemons on loopback carrying one folder between two places: what the sync
tests and ``bench.sync`` put between two MemDesk homes.

    with SyncthingPair(root) as pair:       # root: a temporary folder; everything lives under it
        pair.folders                        # (first side's folder, second side's folder)
        pair.scan()                         # ask both to look for changes now
        pair.wait_for(lambda: ..., 60)      # a bounded wait

Each daemon has its own home (keys, config, database) under ``root``, listens on 127.0.0.1 only,
knows the other by its loopback address, and has global and local discovery, relays, NAT
traversal, usage reports, crash reports and upgrades off: no packet leaves the machine. Stopped
(and reaped) on exit, whatever happened inside, each daemon even when stopping the other failed;
and killed by the kernel if the process that started them dies without exiting the ``with``
(``testing.children``). Every wait is bounded: a start within ``START_TIMEOUT``, each REST call
within ``REST_TIMEOUT``, a stop within ``STOP_TIMEOUT`` per signal.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from testing.children import die_with_parent

FOLDER_ID = "memdesk-sync"
START_TIMEOUT = 60.0
REST_TIMEOUT = 10.0
STOP_TIMEOUT = 20.0

CONFIG = """<configuration version="36">
    <folder id="{folder_id}" label="MemDesk" path="{path}" type="sendreceive" rescanIntervalS="2"
            fsWatcherEnabled="true" fsWatcherDelayS="1" ignorePerms="false" autoNormalize="true">
        <filesystemType>basic</filesystemType>
        <device id="{me}" introducedBy=""></device>
        <device id="{peer}" introducedBy=""></device>
        <minDiskFree unit="%">0</minDiskFree>
        <markerName>.stfolder</markerName>
    </folder>
    <device id="{me}" name="{name}" compression="metadata" introducer="false">
        <address>dynamic</address>
    </device>
    <device id="{peer}" name="peer" compression="metadata" introducer="false">
        <address>tcp://127.0.0.1:{peer_port}</address>
    </device>
    <gui enabled="true" tls="false" debugging="false">
        <address>127.0.0.1:{gui_port}</address>
        <apikey>{api_key}</apikey>
    </gui>
    <options>
        <listenAddress>tcp://127.0.0.1:{port}</listenAddress>
        <globalAnnounceEnabled>false</globalAnnounceEnabled>
        <localAnnounceEnabled>false</localAnnounceEnabled>
        <relaysEnabled>false</relaysEnabled>
        <natEnabled>false</natEnabled>
        <urAccepted>-1</urAccepted>
        <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
        <crashReportingEnabled>false</crashReportingEnabled>
        <startBrowser>false</startBrowser>
        <reconnectionIntervalS>1</reconnectionIntervalS>
        <minHomeDiskFree unit="%">0</minHomeDiskFree>
        <setLowPriority>false</setLowPriority>
    </options>
</configuration>
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class SyncthingError(RuntimeError):
    pass


class _Daemon:
    def __init__(self, root: Path, name: str) -> None:
        self.name = name
        self.home = root / f"syncthing-{name}"
        self.folder = root / f"folder-{name}"
        self.port, self.gui_port = free_port(), free_port()
        self.api_key = secrets.token_hex(16)
        self.process: subprocess.Popen | None = None
        self.log = root / f"syncthing-{name}.log"
        result = subprocess.run(
            ["syncthing", "generate", f"--home={self.home}", "--no-default-folder", "--skip-port-probing"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=_environment(),
        )
        if result.returncode != 0:
            raise SyncthingError(f"syncthing generate failed: {result.stderr or result.stdout}")
        self.device_id = next(
            line.split("Device ID:", 1)[1].strip()
            for line in (result.stdout + result.stderr).splitlines()
            if "Device ID:" in line
        )

    def configure(self, peer: _Daemon) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / ".stfolder").mkdir(exist_ok=True)
        (self.home / "config.xml").write_text(
            CONFIG.format(
                folder_id=FOLDER_ID,
                path=self.folder,
                me=self.device_id,
                peer=peer.device_id,
                name=self.name,
                peer_port=peer.port,
                gui_port=self.gui_port,
                api_key=self.api_key,
                port=self.port,
            ),
            encoding="utf-8",
        )

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                ["syncthing", "serve", f"--home={self.home}", "--no-browser", "--no-restart", "--no-upgrade"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_environment(),
                start_new_session=True,
                preexec_fn=die_with_parent,
            )

    def rest(self, method: str, path: str) -> object:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.gui_port}{path}", method=method, headers={"X-API-Key": self.api_key}
        )
        # loopback only, and no proxy from the environment in between
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=REST_TIMEOUT) as response:
            body = response.read()
        return json.loads(body) if body else None

    def ready(self) -> bool:
        try:
            return self.rest("GET", "/rest/system/ping") == {"ping": "pong"}
        except (OSError, urllib.error.URLError, ValueError):
            return False

    def connected(self, peer: _Daemon) -> bool:
        try:
            connections = self.rest("GET", "/rest/system/connections")
        except (OSError, urllib.error.URLError, ValueError):
            return False
        return bool(connections["connections"].get(peer.device_id, {}).get("connected"))  # type: ignore[index]

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=STOP_TIMEOUT)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:  # the group is gone already; reap the leader below
                pass
            self.process.wait(timeout=STOP_TIMEOUT)


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    # no upgrade checks, no restarts of its own, no default folder in the home
    env.update(STNOUPGRADE="1", STNORESTART="1", STNODEFAULTFOLDER="1", STGUIADDRESS="")
    env.pop("STGUIADDRESS")
    return env


class SyncthingPair:
    def __init__(self, root: Path) -> None:
        if shutil.which("syncthing") is None:
            raise SyncthingError("syncthing is not installed: `make system-deps` installs it (Debian's package)")
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._daemons = (_Daemon(self.root, "first"), _Daemon(self.root, "second"))

    @property
    def folders(self) -> tuple[Path, Path]:
        return self._daemons[0].folder, self._daemons[1].folder

    def __enter__(self) -> SyncthingPair:
        first, second = self._daemons
        first.configure(second)
        second.configure(first)
        try:
            for daemon in self._daemons:
                daemon.start()
            self.wait_for(lambda: all(d.ready() for d in self._daemons), START_TIMEOUT, "both daemons to answer")
            self.wait_for(
                lambda: first.connected(second) and second.connected(first),
                START_TIMEOUT,
                "the daemons to connect on loopback",
            )
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        failures = []
        for daemon in self._daemons:  # each one, even when stopping the other failed
            try:
                daemon.stop()
            except Exception as error:
                failures.append(f"syncthing {daemon.name}: {error!r}")
        if failures and exc_info[0] is None:  # never in place of the test's own failure
            raise SyncthingError("could not stop " + "; ".join(failures))

    def scan(self) -> None:
        for daemon in self._daemons:
            try:
                daemon.rest("POST", f"/rest/db/scan?folder={FOLDER_ID}")
            except (OSError, urllib.error.URLError):
                pass

    def wait_for(
        self,
        condition: Callable[[], bool],
        seconds: float,
        what: str = "the condition",
        pause: Callable[[float], None] = time.sleep,
    ) -> float:
        """Wait until ``condition()`` holds, at most ``seconds``; returns how long it took. ``pause(s)``
        waits between two checks: a window's test passes one that runs Qt's event loop meanwhile, so
        the window's own sync jobs end and show what they applied."""
        started = time.monotonic()
        while True:
            if condition():
                return time.monotonic() - started
            for daemon in self._daemons:
                if daemon.process is not None and daemon.process.poll() is not None:
                    raise SyncthingError(
                        f"syncthing {daemon.name} exited: {daemon.log.read_text(errors='replace')[-2000:]}"
                    )
            if time.monotonic() - started > seconds:
                raise SyncthingError(f"waited {seconds:.0f} s for {what}")
            pause(0.2)
