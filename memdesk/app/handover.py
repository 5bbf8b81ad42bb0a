"""Handing an encrypted store's passphrase to another MemDesk process of the same user, without a
passphrase in any file: the running window serves it on a private local channel, and ``memdesk
mcp`` (which another app starts, with no terminal to ask on) takes it from there.

The channel is a Unix socket in the data folder (``0700``; the socket itself ``0600``), so only
this user's processes can connect; each end also checks the other's user id (``SO_PEERCRED``).
Nothing listens on the network. A socket path must fit in 107 bytes: a deep data folder gets its
socket in a private folder of the system's temporary folder instead, named by the data folder's
hash. While no window runs there is no socket, and asking fails at once: a locked store is a
clear error for the app that asked, never a wait.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import struct
import tempfile
import threading
from pathlib import Path

from memdesk.core.base.errors import PassphraseRequiredError
from memdesk.core.base.paths import Paths

log = logging.getLogger("memdesk.app")

#: Longest path a Unix socket may have (sun_path is 108 bytes with its terminating zero).
MAX_SOCKET_PATH = 107
#: How long the asking side waits for the window's answer (it answers from a thread of its own).
ASK_TIMEOUT_S = 3.0
REQUEST = b"memdesk-key?\n"
#: What a store that is locked tells the app (the hint says how to unlock it for apps).
LOCKED_HINT = (
    "open MemDesk's window (while it runs it lends the store to connected apps), "
    "or keep the passphrase in the system keyring: memdesk mcp keyring"
)


def socket_path(paths: Paths) -> Path:
    """Where the window's channel is for this data folder."""
    inside = paths.home / "handover.sock"
    if len(os.fsencode(str(inside))) <= MAX_SOCKET_PATH:
        return inside
    digest = hashlib.sha256(os.fsencode(str(paths.home.resolve()))).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"memdesk-{os.getuid()}" / f"{digest}.sock"


def _peer_uid(connection: socket.socket) -> int | None:
    if not hasattr(socket, "SO_PEERCRED"):  # pragma: no cover - not Linux: the folder's mode is the check
        return None
    credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", credentials)
    return uid


def _same_user(connection: socket.socket) -> bool:
    uid = _peer_uid(connection)
    return uid is None or uid == os.getuid()


class HandoverServer:
    """Serves the store's passphrase to this user's processes while the window runs. ``close``
    (or the process ending) removes the socket."""

    def __init__(self, paths: Paths, key: str) -> None:
        self._key = key
        self.path = socket_path(paths)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.path.parent, 0o700)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a window killed before it could remove its socket
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        previous = os.umask(0o177)
        try:
            self._socket.bind(str(self.path))
        finally:
            os.umask(previous)
        os.chmod(self.path, 0o600)
        self._socket.listen(4)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="store-handover", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return  # closed
            with connection:
                try:
                    connection.settimeout(ASK_TIMEOUT_S)
                    if not _same_user(connection):
                        log.warning("refused the store's passphrase to another user's process")
                        continue
                    if connection.recv(len(REQUEST)) != REQUEST:
                        continue
                    connection.sendall(json.dumps({"key": self._key}).encode("utf-8") + b"\n")
                except OSError:
                    continue

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            # On Linux closing a socket does not wake a thread blocked in its accept(): the thread
            # stayed blocked for good and close waited its whole timeout. Shutting it down does.
            self._socket.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._socket.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._thread.join(timeout=ASK_TIMEOUT_S)


def key_from_running_app(paths: Paths) -> str | None:
    """The passphrase the running window lends (None: no window serves one)."""
    path = socket_path(paths)
    if not path.exists():
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(ASK_TIMEOUT_S)
        try:
            connection.connect(str(path))
            if not _same_user(connection):
                return None
            connection.sendall(REQUEST)
            answer = b""
            while not answer.endswith(b"\n"):
                chunk = connection.recv(4096)
                if not chunk:
                    break
                answer += chunk
        except OSError:
            return None  # no window behind a socket left over, or it did not answer in time
    try:
        key = json.loads(answer.decode("utf-8")).get("key")
    except (ValueError, AttributeError):
        return None
    return key if isinstance(key, str) and key else None


def locked_error(paths: Paths) -> PassphraseRequiredError:
    return PassphraseRequiredError(f"{paths.database} is encrypted and locked", hint=LOCKED_HINT)
