"""A three-way merge of text by line, for core memory blocks.

Each side's changes against the common base are hunks (a range of base lines and what replaced
them). Hunks that touch different lines both apply; two insertions at the same place both apply
(two devices each appending a line is the common case, not a conflict); two different changes to
the same lines are a conflict, kept as both sides' lines, first then second, so that no line is
lost and every device computes the same text. The caller orders the sides the same way everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher


@dataclass(frozen=True)
class Hunk:
    start: int  # base lines [start, end) are replaced by lines
    end: int
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Merged:
    text: str
    conflict: bool


def split_lines(text: str) -> list[str]:
    return text.split("\n") if text else []


def hunks(base: list[str], other: list[str]) -> list[Hunk]:
    matcher = SequenceMatcher(None, base, other, autojunk=False)
    return [Hunk(i1, i2, tuple(other[j1:j2])) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def _overlap(a: Hunk, b: Hunk) -> bool:
    if a.start == a.end and b.start == b.end:
        return a.start == b.start
    return (
        a.start < b.end
        and b.start < a.end
        or (a.start == a.end and b.start < a.start < b.end)
        or (b.start == b.end and a.start < b.start < a.end)
    )


def merge3(base: str, first: str, second: str) -> Merged:
    """``first`` and ``second`` each changed ``base``: both changes, and whether they collided."""
    if first == second or second == base:
        return Merged(first, False)
    if first == base:
        return Merged(second, False)
    base_lines = split_lines(base)
    ours, theirs = hunks(base_lines, split_lines(first)), hunks(base_lines, split_lines(second))
    out: list[str] = []
    conflict = False
    position = 0
    i = j = 0
    while i < len(ours) or j < len(theirs):
        # the next group: hunks of either side that overlap each other, transitively
        group_a: list[Hunk] = []
        group_b: list[Hunk] = []
        if j >= len(theirs) or (i < len(ours) and (ours[i].start, ours[i].end) <= (theirs[j].start, theirs[j].end)):
            group_a.append(ours[i])
            i += 1
        else:
            group_b.append(theirs[j])
            j += 1
        grown = True
        while grown:
            grown = False
            start = min(h.start for h in group_a + group_b)
            end = max(h.end for h in group_a + group_b)
            span = Hunk(start, end, ())
            if i < len(ours) and _overlap(span, ours[i]):
                group_a.append(ours[i])
                i += 1
                grown = True
            if j < len(theirs) and _overlap(span, theirs[j]):
                group_b.append(theirs[j])
                j += 1
                grown = True
        start = min(h.start for h in group_a + group_b)
        end = max(h.end for h in group_a + group_b)
        out.extend(base_lines[position:start])
        side_a = _replay(base_lines, start, end, group_a)
        side_b = _replay(base_lines, start, end, group_b)
        if not group_a:
            out.extend(side_b)
        elif not group_b or side_a == side_b:
            out.extend(side_a)
        else:
            pure_inserts = all(h.start == h.end for h in group_a + group_b)
            conflict = conflict or not pure_inserts
            out.extend(side_a)
            out.extend(line for line in side_b if line not in side_a)
        position = end
    out.extend(base_lines[position:])
    return Merged("\n".join(out), conflict)


def _replay(base: list[str], start: int, end: int, group: list[Hunk]) -> list[str]:
    """Base lines [start, end) with one side's hunks applied."""
    out: list[str] = []
    position = start
    for hunk in sorted(group, key=lambda h: (h.start, h.end)):
        out.extend(base[position : hunk.start])
        out.extend(hunk.lines)
        position = max(position, hunk.end)
    out.extend(base[position:end])
    return out
