"""Values read from a file another program wrote: what fits the store (SQLite's integers, times
that parse back) and how to quote one in a message."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memdesk.core.base.clock import parse_iso

#: Largest id or number a file may give: SQLite's integers are 64-bit.
MAX_NUMBER = 1 << 62


def number(value: Any, *, minimum: int = -MAX_NUMBER) -> int | None:
    """An integer SQLite can store (and at least ``minimum``), or None."""
    if type(value) is int and minimum <= value <= MAX_NUMBER:
        return value
    return None


def moment(value: Any) -> datetime | None:
    """A time the store can keep and read back, or None."""
    if not isinstance(value, str):
        return None
    try:
        return parse_iso(value.replace("Z", "+00:00"))
    except (ValueError, OverflowError):  # not a time, or one past the calendar's ends
        return None


def shown(value: Any) -> str:
    """A value from the file, short enough for a line of a message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
