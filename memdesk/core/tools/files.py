"""A per-agent folder that ``read_from_text_file`` and ``append_to_text_file`` are confined to.

No path may leave it: absolute paths, ``..`` components and symlinks pointing outside are refused,
and so is a file with more than one name (a hard link made inside the folder to a file elsewhere
looks like any other file there). Every read and every append is capped, so a file the agent did not
write (a 30 MiB line, a 2 GB log) costs a bounded amount of time and memory.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import BinaryIO

from memdesk.core.base.errors import ToolError

#: Lines one read returns at most.
MAX_READ_LINES = 200
#: A longer line comes back cut to its first this many bytes, with a note saying so.
MAX_LINE_BYTES = 4_000
#: Text one read returns at most; the lines after that are left for the next read, with a note.
MAX_READ_BYTES = 16_000
#: How far into a file a read looks for its first line (files the agent writes are smaller).
MAX_SCAN_BYTES = 64 * 1024 * 1024
#: A file the agent appends to stops growing here.
MAX_FILE_BYTES = 10 * 1024 * 1024
#: One append writes at most this much.
MAX_APPEND_BYTES = 256 * 1024

_MB = 1024 * 1024


class FileSandbox:
    def __init__(self, root: Path) -> None:
        self.root = root

    def resolve(self, filename: str) -> Path:
        if not filename or not filename.strip():
            raise ToolError("A file name is required")
        if "\x00" in filename:
            raise ToolError("File names cannot contain NUL characters")
        for flavour in (PurePosixPath(filename), PureWindowsPath(filename)):
            if flavour.is_absolute() or flavour.drive or flavour.root:
                raise ToolError(f"{filename!r}: absolute paths are not allowed; use a name inside your files folder")
            if ".." in flavour.parts:
                raise ToolError(f"{filename!r}: '..' is not allowed; files must stay inside your files folder")
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        root = self.root.resolve()
        candidate = (root / filename).resolve()  # follows symlinks, so a link pointing out is caught
        if candidate != root and root not in candidate.parents:
            raise ToolError(f"{filename!r} points outside your files folder")
        return candidate

    def read_lines(self, filename: str, line_start: int, num_lines: int) -> str:
        path = self.resolve(filename)
        if line_start < 1:
            raise ToolError("line_start counts from 1")
        num_lines = max(1, min(num_lines, MAX_READ_LINES))
        try:
            # O_NONBLOCK: a named pipe put in the folder must not hang the read waiting for a writer.
            descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
        except FileNotFoundError:
            raise ToolError(f"No file named {filename!r} in your files folder") from None
        except OSError as error:
            raise ToolError(f"{filename!r} cannot be read: {error.strerror}") from None
        with os.fdopen(descriptor, "rb") as handle:
            _require_single_regular_file(
                handle.fileno(), filename, missing=f"No file named {filename!r} in your files folder"
            )
            return _read_lines(handle, filename, line_start, num_lines)

    def append(self, filename: str, content: str) -> int:
        path = self.resolve(filename)
        text = content if content.endswith("\n") else content + "\n"
        data = text.encode("utf-8")
        if len(data) > MAX_APPEND_BYTES:
            raise ToolError(
                f"One append may write at most {MAX_APPEND_BYTES // 1024} KB; this one was {len(data) // 1024} KB."
                " Append it in parts"
            )
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # O_NOFOLLOW: a symlink swapped in after the check above is refused rather than followed.
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _NONBLOCK
        try:
            descriptor = os.open(path, flags, 0o600)
        except OSError as error:
            raise ToolError(f"{filename!r} cannot be written: {error.strerror}") from None
        with os.fdopen(descriptor, "ab") as handle:
            # Checked on the open file, so a hard link or growth after resolve() cannot slip by.
            size = _require_single_regular_file(
                handle.fileno(), filename, missing=f"{filename!r} is not a regular file"
            )
            if size + len(data) > MAX_FILE_BYTES:
                raise ToolError(f"{filename!r} would grow beyond {MAX_FILE_BYTES // _MB} MB")
            handle.write(data)
        return len(content)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _require_single_regular_file(descriptor: int, filename: str, *, missing: str) -> int:
    """The open file's size; refuses anything but a regular file with exactly one name."""
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(missing)
    if info.st_nlink > 1:
        raise ToolError(
            f"{filename!r} is a hard link (it has {info.st_nlink} names, maybe outside your files folder);"
            " it is not used"
        )
    return info.st_size


def _read_lines(handle: BinaryIO, filename: str, line_start: int, num_lines: int) -> str:
    scanned = 0
    for _ in range(line_start - 1):  # skip to the first line asked for, a bounded piece at a time
        while True:
            piece = handle.readline(MAX_LINE_BYTES)
            scanned += len(piece)
            if not piece:
                raise ToolError(f"{filename!r} has fewer than {line_start} lines")
            if scanned > MAX_SCAN_BYTES:
                raise ToolError(
                    f"{filename!r}: line {line_start} is beyond the first {MAX_SCAN_BYTES // _MB} MB,"
                    " which is all a read looks at"
                )
            if piece.endswith(b"\n"):
                break
    lines: list[str] = []
    returned = 0
    for number in range(line_start, line_start + num_lines):
        head = handle.readline(MAX_LINE_BYTES)
        if not head:
            break
        went_on, finished = (False, True) if head.endswith(b"\n") else _skip_rest_of_line(handle)
        line = head.rstrip(b"\n").decode("utf-8", errors="replace")
        if went_on:
            line += f" [... line {number} is longer than {MAX_LINE_BYTES} bytes; only its beginning is shown]"
        if lines and returned + len(head) > MAX_READ_BYTES:
            lines.append(f"[... stopped after {MAX_READ_BYTES} bytes of text; read on from line {number}]")
            break
        lines.append(line)
        returned += len(head)
        if not finished:
            lines.append(
                f"[... line {number} goes on for more than {MAX_SCAN_BYTES // _MB} MB; nothing after it is read]"
            )
            break
    if not lines:
        raise ToolError(f"{filename!r} has fewer than {line_start} lines")
    return "\n".join(lines)


def _skip_rest_of_line(handle: BinaryIO) -> tuple[bool, bool]:
    """Moves past the rest of the current line, reading at most MAX_SCAN_BYTES: whether the line
    went on, and whether its end was reached."""
    went_on = False
    skipped = 0
    while skipped <= MAX_SCAN_BYTES:
        piece = handle.readline(MAX_LINE_BYTES)
        skipped += len(piece)
        went_on = went_on or piece.rstrip(b"\n") != b""
        if not piece or piece.endswith(b"\n"):
            return went_on, True
    return went_on, False
