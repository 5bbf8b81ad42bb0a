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


#: Most characters an imported agent's system prompt and core memory may hold together: about
#: 5,500 tokens, so that with the functions' descriptions (about 2,000) and an answer (384) a turn
#: still fits MemDesk's default context of 8,192 tokens with room for the conversation. Each block
#: within its own limit is not enough: twelve full blocks made every turn overflow.
MAX_IMPORTED_PROMPT_CHARS = 22_000
#: Most of that the system prompt may take; the blocks share the rest.
MAX_IMPORTED_SYSTEM_CHARS = 12_000


@dataclass(frozen=True)
class FittedPrompt:
    system: str
    values: list[str]  # the blocks' values, in the order given
    notes: list[str] = field(default_factory=list)


def fit_prompt(
    system: str,
    blocks: list[tuple[str, str]],
    *,
    owner: str = "",
    total: int = MAX_IMPORTED_PROMPT_CHARS,
    system_share: int = MAX_IMPORTED_SYSTEM_CHARS,
) -> FittedPrompt:
    """The system prompt and the blocks' values (``(label, value)`` pairs, each already within its
    limit) cut so that together they hold at most ``total`` characters: the system prompt to
    ``system_share``, then the longest blocks first, each keeping its start, so that short blocks
    (who the user is, the persona) stay whole."""
    whose = f" of {owner!r}" if owner else ""
    notes = []
    if len(system) > system_share:
        notes.append(
            f"The system prompt{whose} held {len(system):,} characters: cut to its first {system_share:,}, "
            "so that a turn fits the model's context window"
        )
        system = system[:system_share]
    room = total - len(system)
    lengths = [len(value) for _label, value in blocks]
    if sum(lengths) <= room:
        return FittedPrompt(system, [value for _label, value in blocks], notes)
    # The largest share every block can keep: blocks shorter than it keep everything.
    cap, left = 0, room
    for position, length in enumerate(sorted(lengths)):
        share = left // (len(lengths) - position)
        if length > share:
            cap = share
            break
        left -= length
    values = []
    for label, value in blocks:
        if len(value) > cap:
            notes.append(
                f"Block {label!r}{whose} held {len(value):,} characters: cut to its first {cap:,}, so that the system "
                f"prompt and core memory together hold at most {total:,} and a turn fits the model's context window"
            )
            value = value[:cap]
        values.append(value)
    return FittedPrompt(system, values, notes)
