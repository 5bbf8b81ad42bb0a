"""A per-agent folder that ``read_from_text_file`` and ``append_to_text_file`` are confined to.

No path may leave it: absolute paths, ``..`` components and symlinks pointing outside are refused.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath

from desktop.errors import ToolError

MAX_READ_LINES = 200
MAX_FILE_BYTES = 10 * 1024 * 1024


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
        self.root.mkdir(parents=True, exist_ok=True)
        root = self.root.resolve()
        candidate = (root / filename).resolve()  # follows symlinks, so a link pointing out is caught
        if candidate != root and root not in candidate.parents:
            raise ToolError(f"{filename!r} points outside your files folder")
        return candidate

    def read_lines(self, filename: str, line_start: int, num_lines: int) -> str:
        path = self.resolve(filename)
        if not path.is_file():
            raise ToolError(f"No file named {filename!r} in your files folder")
        if line_start < 1:
            raise ToolError("line_start counts from 1")
        num_lines = max(1, min(num_lines, MAX_READ_LINES))
        lines = []
        with open(path, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if number >= line_start + num_lines:
                    break
                if number >= line_start:
                    lines.append(line.rstrip("\n"))
        if not lines:
            raise ToolError(f"{filename!r} has fewer than {line_start} lines")
        return "\n".join(lines)

    def append(self, filename: str, content: str) -> int:
        path = self.resolve(filename)
        if path.exists() and path.stat().st_size + len(content.encode()) > MAX_FILE_BYTES:
            raise ToolError(f"{filename!r} would grow beyond {MAX_FILE_BYTES // (1024 * 1024)} MB")
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_NOFOLLOW: a symlink swapped in after the check above is refused rather than followed.
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        descriptor = os.open(path, flags, 0o600)
        with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
            handle.write(content if content.endswith("\n") else content + "\n")
        return len(content)
