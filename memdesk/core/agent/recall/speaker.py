"""When a message asks about one speaker, that speaker's memories go first in the section.

"What activities does Melanie partake in?" is answered by what Melanie said, over many sessions;
the search's best hits also hold what the other speaker said around it (the replies that named
her), and those took half the section. Ranked first, the named speaker's memories reach further
down the ranking in the same budget. The other speakers' best few stay ahead of them: a question
asked of the wrong speaker ("what did Caroline realise after her race?" when Melanie ran it) is
answered by what the other one said.

Measured on LoCoMo's development conversations (docs/evaluation.md): with 1,638 tokens of
memories, multi-hop questions had their evidence in the section for 0.44 -> 0.53 of them,
adversarial 0.96 -> 0.92, all questions 0.851 -> 0.856; without the others' best five first,
adversarial fell to 0.24.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from memdesk.core.retrieval.query import mentioned_names

T = TypeVar("T")

#: How many of the other speakers' best memories stay ahead of the named speaker's.
OTHERS_FIRST = 5


def named_speaker_first(query: str, found: Sequence[T], said_by: Sequence[str], speakers: Sequence[str]) -> list[T]:
    """``found`` (best first; ``said_by``: who said each) with the memories of the one speaker
    ``query`` names moved ahead of everyone else's but the first ``OTHERS_FIRST``; unchanged when
    it names no speaker, or several."""
    names = mentioned_names(query, sorted(s for s in speakers if s))
    if len(names) != 1:
        return list(found)
    name = next(iter(names))
    mine = [item for item, who in zip(found, said_by, strict=True) if who == name]
    others = [item for item, who in zip(found, said_by, strict=True) if who != name]
    return others[:OTHERS_FIRST] + mine + others[OTHERS_FIRST:]
