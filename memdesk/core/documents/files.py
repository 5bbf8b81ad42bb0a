"""Which files a batch covers: the given paths, walked without leaving them and without looping."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from memdesk.core.base.errors import DocumentError
from memdesk.core.documents.parsers import supported


def discover(paths: list[Path]) -> Iterator[Path | DocumentError]:
    """Yield each file to ingest once (by real path), or a DocumentError for a path that cannot be.

    Directories are walked recursively, following links only while they stay inside one of the
    given roots; each directory's real path is visited once, so symlink loops end. Inside folders,
    hidden and unsupported files are skipped silently; a file named explicitly is reported."""
    roots: list[Path | None] = []
    for path in paths:
        try:
            roots.append(Path(path).resolve(strict=True))
        except (OSError, RuntimeError):
            roots.append(None)
    seen_files: set[Path] = set()
    seen_dirs: set[Path] = set()

    def inside(real: Path) -> bool:
        return any(root is not None and (real == root or root in real.parents) for root in roots)

    for given, root in zip(paths, roots, strict=True):
        if root is None:
            yield DocumentError(f"{given}: no such file or folder (it may have been moved or deleted)")
            continue
        if root.is_file():
            if root not in seen_files:
                seen_files.add(root)
                yield Path(given)
            continue
        for folder, dirs, files in os.walk(root, followlinks=True):
            real_folder = Path(folder).resolve()
            if real_folder in seen_dirs or not inside(real_folder):
                dirs[:] = []
                continue
            seen_dirs.add(real_folder)
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                if name.startswith("."):
                    continue
                candidate = Path(folder) / name
                try:
                    real = candidate.resolve(strict=True)
                except (OSError, RuntimeError):
                    continue  # a dangling link inside a folder is not something the user asked for
                if not inside(real) or real in seen_files or not supported(candidate):
                    continue
                seen_files.add(real)
                yield candidate
