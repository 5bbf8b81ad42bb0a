"""What an imported core memory block may hold. Core memory is in every prompt, so a block an
agent file brings is cut to its character limit, and the limit itself to a maximum: a 2 MB block
would otherwise make every turn fail with ContextOverflowError. Both importers (Letta .af and
MemDesk JSON) fit blocks here and report each cut in their summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memdesk.core.memory.core_memory import DEFAULT_LIMIT

#: Largest character limit an imported block keeps: Letta's own default block limit, so a block of
#: a stock Letta agent is never cut; about 5,000 tokens, which leaves room in the default 8,192.
MAX_IMPORTED_BLOCK_CHARS = 20_000


@dataclass(frozen=True)
class FittedBlock:
    value: str
    limit: int
    notes: list[str] = field(default_factory=list)  # what changed, for the import summary


def fit_block(
    label: str, value: str, limit: Any, *, owner: str = "", maximum: int = MAX_IMPORTED_BLOCK_CHARS
) -> FittedBlock:
    """The block's text and limit as they may be stored: a missing limit becomes one that holds the
    text (up to ``maximum``), a limit over ``maximum`` becomes ``maximum``, and text over the
    limit is cut to it, keeping its start."""
    notes = []
    block = f"Block {label!r}" + (f" of {owner!r}" if owner else "")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
        limit = min(max(DEFAULT_LIMIT, len(value)), maximum)
        notes.append(f"{block} had no valid character limit: set to {limit:,}")
    elif limit > maximum:
        notes.append(
            f"{block} had a limit of {limit:,} characters, over MemDesk's maximum for an imported block:"
            f" set to {maximum:,}"
        )
        limit = maximum
    if len(value) > limit:
        notes.append(
            f"{block} held {len(value):,} characters, over its limit of {limit:,}:"
            f" cut to its first {limit:,} characters"
        )
        value = value[:limit]
    return FittedBlock(value, limit, notes)
