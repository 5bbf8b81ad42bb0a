"""The ``conversations.json`` inside an export's zip, read as a stream, safely.

A zip's directory says how large each member unpacks; CPython's zipfile stops inflating a member
at that size, so a member that declares too much, or far more than it holds (a zip bomb, by its
ratio), is refused before a byte is inflated. A zip whose end is missing (a download cut short)
has no directory: its member is then read from its local header as far as the data goes, and the
conversations complete before the cut are imported.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, cast

from memdesk.core.base.errors import UnrecognisedExportError, UnsafeArchiveError

#: The most a member may unpack to (real exports of years of chats are a few GB).
MAX_UNPACKED = 16 << 30
#: Unpacked over packed size beyond which a member is taken for a zip bomb (JSON packs 5-20 times).
MAX_RATIO = 200
#: Below this, a ratio says nothing (a tiny member of repeated characters packs 1000 times).
RATIO_FROM = 16 << 20
NAMES = ("conversations.json",)
_LOCAL = b"PK\x03\x04"


def _gb(count: int) -> str:
    return f"{count / (1 << 30):,.1f} GB" if count >= 1 << 30 else f"{count / (1 << 20):,.0f} MB"


def check_member(info: zipfile.ZipInfo, zip_name: str) -> None:
    if info.file_size > MAX_UNPACKED:
        raise UnsafeArchiveError(
            f"{zip_name}: {info.filename} unpacks to {_gb(info.file_size)},"
            f" more than the {_gb(MAX_UNPACKED)} an export may hold",
            hint="it was not read",
        )
    if info.file_size > RATIO_FROM and info.file_size > MAX_RATIO * max(1, info.compress_size):
        raise UnsafeArchiveError(
            f"{zip_name}: {info.filename} would unpack to {_gb(info.file_size)} from {_gb(info.compress_size)}"
            " (a zip bomb?)",
            hint="it was not read",
        )


def member_opener(path: Path) -> tuple[Callable[[], IO[bytes]], str, str, int]:
    """How to open the export's conversations (a fresh stream each call), the member's name, a
    note when the zip is incomplete, and the size it unpacks to (0: unknown)."""
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except zipfile.BadZipFile:
        return _truncated(path)
    except OSError as error:
        raise UnrecognisedExportError(f"{path.name} could not be read: {error.strerror or error}") from None
    wanted = [i for i in infos if i.filename.rsplit("/", 1)[-1] in NAMES and not i.is_dir()]
    if not wanted:
        jsons = [i for i in infos if i.filename.endswith(".json") and not i.is_dir()]
        wanted = jsons if len(jsons) == 1 else []
    if not wanted:
        raise UnrecognisedExportError(
            f"{path.name} is a zip without a conversations.json",
            hint="choose the zip ChatGPT or Claude sent, or the conversations.json inside it",
        )
    info = min(wanted, key=lambda i: i.filename.count("/"))
    check_member(info, path.name)

    def open_member() -> IO[bytes]:
        archive = zipfile.ZipFile(path)
        try:
            return cast(IO[bytes], _Closing(archive.open(info), archive))
        except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as error:
            archive.close()
            raise UnrecognisedExportError(f"{path.name}: {info.filename} cannot be unpacked ({error})") from None

    return open_member, info.filename, "", info.file_size


class _Closing(io.RawIOBase):
    """A member's stream that closes its zip with it; errors inside the data end the stream."""

    def __init__(self, member: IO[bytes], archive: zipfile.ZipFile) -> None:
        self._member, self._archive = member, archive
        self.damaged = ""

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.damaged:
            return b""
        try:
            return self._member.read(size)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as error:
            self.damaged = str(error) or type(error).__name__  # the reader sees the data end here
            return b""

    def close(self) -> None:
        self._member.close()
        self._archive.close()
        super().close()


def _truncated(path: Path) -> tuple[Callable[[], IO[bytes]], str, str, int]:
    with open(path, "rb") as file:
        head = file.read(1 << 20)
    at = 0
    while True:
        at = head.find(_LOCAL, at)
        if at < 0 or at + 30 > len(head):
            raise UnrecognisedExportError(
                f"{path.name} is a damaged zip with no conversations.json that can be found",
                hint="download the export again",
            )
        (_sig, _version, flags, method, _t, _d, _crc, packed, unpacked, name_len, extra_len) = struct.unpack(
            "<4sHHHHHIIIHH", head[at : at + 30]
        )
        name = head[at + 30 : at + 30 + name_len].decode("utf-8", "replace")
        if name.rsplit("/", 1)[-1] in NAMES and method in (0, 8) and not flags & 1:
            start = at + 30 + name_len + extra_len
            break
        at += 4
    if unpacked:
        check_member(_info(name, packed, unpacked), path.name)

    def open_member() -> IO[bytes]:
        return cast(IO[bytes], _Inflating(open(path, "rb"), start, method == 8))

    return open_member, name, "the zip is incomplete (a download cut short?): only what it holds was read", unpacked


def _info(name: str, packed: int, unpacked: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.compress_size, info.file_size = packed, unpacked
    return info


class _Inflating(io.RawIOBase):
    """A member read from its local header to wherever the data stops, bounded like the rest."""

    def __init__(self, file: IO[bytes], start: int, deflated: bool) -> None:
        file.seek(start)
        self._file = file
        self._inflater = zlib.decompressobj(-15) if deflated else None
        self._out = 0
        self._in = 0
        self._pending = b""
        self.damaged = ""

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        size = size if size and size > 0 else 1 << 20
        while not self._pending:
            data = self._file.read(1 << 16)
            if not data:
                return b""
            self._in += len(data)
            if self._inflater is None:
                self._pending = data
                break
            try:
                self._pending = self._inflater.decompress(data)  # at most ~1,000 times 64 KB
            except zlib.error as error:
                self.damaged = str(error)
                return b""
            if self._inflater.eof:
                self._file.seek(0, io.SEEK_END)
        out, self._pending = self._pending[:size], self._pending[size:]
        self._out += len(out)
        if self._out > MAX_UNPACKED or (self._out > RATIO_FROM and self._out > MAX_RATIO * self._in):
            raise UnsafeArchiveError("the zip unpacks to far more than it holds (a zip bomb?); reading stopped")
        return out

    def close(self) -> None:
        self._file.close()
        super().close()
