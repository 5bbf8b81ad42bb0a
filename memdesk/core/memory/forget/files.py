"""The data folder's files, too: found by walking the folder, not from a list of files.

Beside the store, MemDesk writes text into files: its logs (no conversation text, a test holds
it to that, but a line an older version, a traceback or a tool wrote could still name it), the
messages sent before the store opened (``sent-before-open.jsonl``), the agent's own files (its
file tools), and whatever a later version adds. Every file under the data folder is read, except
what has its own handling or holds no one's words (``DataFolder``): the store and its journal
(scrubbed in SQL), the backups (purged on request), the saved prompt states (deleted), model
weights and downloads, other agents' files, and the user's own tools, which are the user's code:
named in the preview, never changed.

A file loses its lines that hold the phrases, rewritten in place (read, filter, write, truncate)
rather than replaced: the window's log handler keeps its file open in append mode and would go on
writing to a replaced file's old, unlinked copy. A file whose name holds them goes whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memdesk.core.base.paths import Paths
from memdesk.core.memory.forget.matching import Phrases


@dataclass(frozen=True)
class DataFolder:
    home: Path
    #: Read and changed elsewhere (the store and its journal, backups, the KV cache) or holding
    #: no one's words (weights, downloads): never read here.
    skipped: tuple[Path, ...]
    #: The user's own code: named in the preview when it holds the phrases, never changed.
    user_code: Path
    #: Every agent's own files folder lives here; only the forgetting agent's is read.
    agent_files_root: Path

    @classmethod
    def of(cls, paths: Paths, backups: Path | None = None) -> DataFolder:
        store = paths.database
        skipped = [store.with_name(store.name + suffix) for suffix in ("", "-wal", "-shm", "-journal")]
        skipped += [paths.kv_cache, paths.downloads, paths.user_models, paths.backups]
        if backups is not None:
            skipped.append(backups)
        return cls(paths.home, tuple(skipped), paths.user_tools, paths.files_root)

    def _walk(self, folder: Path, agent_id: int) -> Iterator[Path]:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            path = Path(entry.path)
            if path in self.skipped or path == self.user_code:
                continue
            if folder == self.agent_files_root and entry.name != f"agent-{agent_id}":
                continue  # another agent's files
            if entry.is_dir(follow_symlinks=False):
                yield from self._walk(path, agent_id)
            elif entry.is_file(follow_symlinks=False):
                yield path

    def text_files(self, agent_id: int) -> list[Path]:
        """The files a forget for ``agent_id`` reads and changes."""
        return list(self._walk(self.home, agent_id)) if self.home.is_dir() else []

    def user_code_files(self) -> list[Path]:
        if not self.user_code.is_dir():
            return []
        return sorted(p for p in self.user_code.rglob("*") if p.is_file() and not p.is_symlink())

    def name(self, path: Path) -> str:
        return path.relative_to(self.home).as_posix()


def _lines(path: Path) -> list[bytes]:
    with open(path, "rb") as handle:
        return handle.read().splitlines(keepends=True)


def _matches(phrases: Phrases, line: bytes) -> bool:
    return phrases.matches(line.decode("utf-8", errors="replace"))


def find_in_files(folder: DataFolder | None, agent_id: int, phrases: Phrases) -> dict[str, int]:
    """The files that hold the phrases, with how many of their lines would go (a file whose name
    holds them counts its every line, at least one)."""
    found: dict[str, int] = {}
    if folder is None or not phrases:
        return found
    for path in folder.text_files(agent_id):
        try:
            lines = _lines(path)
        except OSError:
            continue
        if phrases.matches(path.name):
            found[folder.name(path)] = max(1, len(lines))
        elif count := sum(1 for line in lines if _matches(phrases, line)):
            found[folder.name(path)] = count
    return found


def user_code_naming(folder: DataFolder | None, phrases: Phrases) -> list[str]:
    """The user's own tool files that hold the phrases (never changed: the user's code)."""
    if folder is None or not phrases:
        return []
    named = []
    for path in folder.user_code_files():
        try:
            if phrases.matches(path.name) or any(_matches(phrases, line) for line in _lines(path)):
                named.append(folder.name(path))
        except OSError:
            continue
    return named


def scrub_files(folder: DataFolder | None, agent_id: int, phrases: Phrases) -> tuple[int, list[str]]:
    """Remove every line that holds the phrases from every file a forget reads (and the files
    whose name holds them); returns how many lines went, and the files that could not be changed
    (with why)."""
    if folder is None or not phrases:
        return 0, []
    removed, errors = 0, []
    for path in folder.text_files(agent_id):
        try:
            if phrases.matches(path.name):
                removed += max(1, len(_lines(path)))
                path.unlink()
                continue
            with open(path, "r+b") as handle:
                lines = handle.read().splitlines(keepends=True)
                kept = [line for line in lines if not _matches(phrases, line)]
                if len(kept) == len(lines):
                    continue
                removed += len(lines) - len(kept)
                handle.seek(0)
                handle.write(b"".join(kept))
                handle.truncate()
                handle.flush()
                os.fsync(handle.fileno())
        except FileNotFoundError:
            continue  # gone meanwhile
        except OSError as error:
            errors.append(f"{folder.name(path)}: {error.strerror or error}")
    return removed, errors
