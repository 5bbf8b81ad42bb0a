"""Packing automatic recall's memories into its section's budget, tightly.

Each memory used to be a line of its own, ``[8 May 2023, Caroline] text``: about 12 tokens of date,
speaker, quotes and separator before a chat line of 30. Memories said on the same day share one
line and one date instead, in the order they were said (a question and its answer read as they
were exchanged)::

    [8 May 2023] Caroline: I went to a support group yesterday.
    Melanie: That sounds powerful!

so the same budget holds more of them. A memory from another source (an archival passage), or the
only one of its day, keeps its own line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from memdesk.core.base.clock import day_month_year

#: Between two memories of one day in a line.
SEPARATOR = "\n"


def _surely_fits(text: str, tokens: int) -> bool:
    """Whether ``text`` is certainly no longer than ``tokens`` without asking the tokenizer (a
    call to the model's process): every token stands for at least one byte, and a few are added
    around the text (a start token, a leading space)."""
    return len(text.encode("utf-8")) + 4 <= tokens


def _day(memory: Any, grouped_source: str) -> str | None:
    """The day a memory shares a line by (None: a line of its own). A memory marked as one version
    of a fact (``update of 3 May 2024``: agent.recall_versions) keeps its own line, where the mark is."""
    if memory.source != grouped_source or memory.at is None or not memory.where or getattr(memory, "version", ""):
        return None
    return day_month_year(memory.at)


def render_lines(chosen: Sequence[tuple[Any, str]], grouped_source: str) -> list[str]:
    """The section's lines for ``chosen`` (memory, its text as shown), in the order of each line's
    first memory; a day's memories in the order they were said."""
    lines: list[list[tuple[Any, str]]] = []
    by_day: dict[str, list[tuple[Any, str]]] = {}
    for memory, text in chosen:
        day = _day(memory, grouped_source)
        if day is None:
            lines.append([(memory, text)])
        elif day in by_day:
            by_day[day].append((memory, text))
        else:
            by_day[day] = [(memory, text)]
            lines.append(by_day[day])
    return [_line(group) for group in lines]


def _line(group: list[tuple[Any, str]]) -> str:
    if len(group) == 1:
        memory, text = group[0]
        return memory.line(text)
    ordered = sorted(group, key=lambda pair: pair[0].at)
    return f"[{day_month_year(ordered[0][0].at)}] " + SEPARATOR.join(
        f"{memory.where}: {text}" for memory, text in ordered
    )


def pack(
    found: Sequence[Any],
    *,
    skip: Callable[[Any], bool],
    budget: int,
    item_tokens: int,
    max_hits: int,
    grouped_source: str,
    count_tokens: Callable[[str], int],
    truncate: Callable[[str, int], str],
    render: Callable[[list[str]], str],
) -> tuple[list[Any], list[str]]:
    """The best memories of ``found``, in rank order, that fit ``budget`` tokens together, and the
    section's lines. ``skip``: memories not to show (seen already, or duplicates); ``item_tokens``
    bounds one memory (a long passage is cut); ``render``: the whole event from its lines. Each
    memory is counted once (the tokenizer may be a call to another process), as what it adds: a
    line of its own, or its part of its day's line; the rendered event is checked at the end
    (joining pieces can merge a token or two at their seams)."""
    chosen: list[tuple[Any, str]] = []
    days: set[str] = set()
    used = count_tokens(render([]))
    seam = max(0, count_tokens(render(["a", "a"])) - count_tokens(render(["a"])) - count_tokens('"a"'))  # the ", "
    for memory in found:
        if skip(memory):
            continue
        text = memory.text if _surely_fits(memory.text, item_tokens) else truncate(memory.text, item_tokens)
        day = _day(memory, grouped_source)
        if day is not None and day in days:
            piece = json.dumps(f"{SEPARATOR}{memory.where}: {text}", ensure_ascii=False)[1:-1]
            cost = count_tokens(piece)
        else:
            cost = count_tokens(json.dumps(memory.line(text), ensure_ascii=False)) + seam
        if used + cost > budget:
            continue  # a shorter one further down may still fit
        chosen.append((memory, text))
        if day is not None:
            days.add(day)
        used += cost
        if len(chosen) >= max_hits:
            break
    lines = render_lines(chosen, grouped_source)
    while chosen and count_tokens(render(lines)) > budget:
        chosen.pop()
        lines = render_lines(chosen, grouped_source)
    return [memory for memory, _ in chosen], lines
