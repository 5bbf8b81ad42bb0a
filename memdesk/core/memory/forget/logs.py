"""The log files, too: MemDesk logs no conversation text (a test holds it to that), but a line an
older version, a traceback or a tool wrote could still name what is being forgotten.

Files are rewritten in place (read, filter, write, truncate) rather than replaced: the window's
log handler keeps its file open in append mode and would go on writing to a replaced file's old,
unlinked copy.
"""

from __future__ import annotations

from pathlib import Path

from memdesk.core.memory.forget.matching import Phrases


def scrub_logs(folder: Path | None, phrases: Phrases) -> int:
    """Remove every line that matches from every file in ``folder``; returns how many lines went."""
    if folder is None or not folder.is_dir() or not phrases:
        return 0
    removed = 0
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        with open(path, "r+b") as handle:
            lines = handle.read().splitlines(keepends=True)
            kept = [line for line in lines if not phrases.matches(line.decode("utf-8", errors="replace"))]
            if len(kept) == len(lines):
                continue
            removed += len(lines) - len(kept)
            handle.seek(0)
            handle.write(b"".join(kept))
            handle.truncate()
    return removed
