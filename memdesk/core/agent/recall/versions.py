"""Newest version first: automatic recall's hits that state one fact twice, ordered and marked.

When the hits hold an older and a newer statement of the same fact ("150 commits", later "165
commits"; "I have never used Flask-Login", elsewhere "Flask-Login was integrated"), both stay in
the section with their dates, the newer placed right before the older where the better-ranked of
the two was, and each line says what the other is: ``[12 May 2024, Ada; update of 3 May 2024]``
and ``[3 May 2024, Ada; updated 12 May 2024]``, or ``contradicts`` / ``contradicted`` for a
negation. A model then reads the current version first and knows the other is not to be trusted
on its own. The pairs are found without a model (memdesk.core.retrieval.versions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from memdesk.core.agent.recall.sources import Memory
from memdesk.core.base.clock import day_month_year
from memdesk.core.retrieval.versions import UPDATE, find_versions

#: Hits compared with each other, best first: those a section of memories can hold.
CONSIDERED = 40


#: What auto_recall.excerpt adds around the part of a long message it shows: not what was said.
_EXCERPT_NOTE = re.compile(r"\s*\(part of a [\d,]+-character message; [^()]*\)$")


def _said(text: str) -> str:
    return _EXCERPT_NOTE.sub("", text).strip("… ")


def _marks(kind: str, newer: Memory, older: Memory) -> tuple[str, str]:
    assert newer.at is not None and older.at is not None  # find_versions pairs dated statements only
    new_day, old_day = day_month_year(newer.at), day_month_year(older.at)
    if kind == UPDATE:
        return f"update of {old_day}", f"updated {new_day}"
    return f"contradicts {old_day}", f"contradicted {new_day}"


def newest_first(query: str, found: Sequence[Memory], considered: int = CONSIDERED) -> list[Memory]:
    """``found`` (best first, for ``query``) with each pair of one speaker's versions of a fact the
    query asks about adjacent, newer first, at the better of their two places, both marked
    (``Memory.version``); everything else in its order."""
    head = list(found[:considered])
    pairs = find_versions(
        [(_said(m.text), m.at) for m in head], about=query, speakers=[(m.source, m.where) for m in head]
    )
    if not pairs:
        return list(found)
    partner: dict[int, int] = {}
    for pair in pairs:
        newer_mark, older_mark = _marks(pair.kind, head[pair.newer], head[pair.older])
        head[pair.newer] = replace(head[pair.newer], version=newer_mark)
        head[pair.older] = replace(head[pair.older], version=older_mark)
        partner[min(pair.newer, pair.older)] = pair.newer
        partner[max(pair.newer, pair.older)] = -1  # placed with its partner
    ordered: list[Memory] = []
    for place, memory in enumerate(head):
        if place not in partner:
            ordered.append(memory)
        elif partner[place] >= 0:
            newer = partner[place]
            older = next(p.older for p in pairs if p.newer == newer)
            ordered.extend((head[newer], head[older]))
    return ordered + list(found[considered:])
