"""Readable differences between two versions of a memory text: word-level segments for the
window's coloured diff, line-level for the terminal."""

from __future__ import annotations

import difflib

from memdesk.core.text.words import split_pieces

EQUAL, INSERT, DELETE = "equal", "insert", "delete"


def segments(before: str, after: str) -> list[tuple[str, str]]:
    """(operation, text) pieces that turn ``before`` into ``after``, by words, adjacent pieces merged."""
    old, new = split_pieces(before), split_pieces(after)
    pieces: list[tuple[str, str]] = []

    def add(operation: str, text: str) -> None:
        if not text:
            return
        if pieces and pieces[-1][0] == operation:
            pieces[-1] = (operation, pieces[-1][1] + text)
        else:
            pieces.append((operation, text))

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            add(EQUAL, "".join(old[i1:i2]))
        else:
            add(DELETE, "".join(old[i1:i2]))
            add(INSERT, "".join(new[j1:j2]))
    return pieces


def unified(before: str, after: str, *, indent: str = "") -> str:
    """Changed lines only, ``-`` for removed and ``+`` for added."""
    lines = []
    for line in difflib.ndiff(before.splitlines(), after.splitlines()):
        if line.startswith(("- ", "+ ")):
            lines.append(indent + line)
    return "\n".join(lines) if lines else indent + "(no change in the text)"


def size_change(before: str | None, after: str | None) -> str:
    """ "+12 characters", "-3 characters", "new, 40 characters", "removed"."""
    if before is None and after is None:
        return ""
    if before is None:
        return f"new, {len(after or '')} characters"
    if after is None:
        return "removed"
    delta = len(after) - len(before)
    return f"{'+' if delta >= 0 else '−'}{abs(delta)} characters"
