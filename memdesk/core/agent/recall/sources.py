"""What automatic recall searches: each source finds memories (``Memory``) out of the model's
view; the conversation's source also orders them and judges how well they answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from memdesk.core.agent.recall.speaker import named_speaker_first
from memdesk.core.base.clock import day_month_year
from memdesk.core.memory.archival import ArchivalMemory
from memdesk.core.memory.recall import Message, RecallMemory
from memdesk.core.retrieval.nothing_judge import DEPTH as JUDGE_DEPTH
from memdesk.core.retrieval.support import support

CONVERSATION = "conversation"


@dataclass(frozen=True)
class Memory:
    """One hit: where it comes from, a stable reference, its text and date."""

    source: str  # "conversation", "archival", ... (a MemorySource's name)
    ref: str  # unique within the agent's memory: "message:12", "passage:3"
    text: str
    at: datetime | None
    where: str = ""  # who said it, or the document it comes from
    score: float = 0.0
    item: Any = None  # the store's own object (Message, PassageHit), for the window's panels
    version: str = ""  # another hit states the same fact: "update of 3 May 2024" (recall_versions)
    # what the learned ranker read of it (memdesk.core.retrieval.features), for the "nothing on that" judge
    features: Any = field(default=None, compare=False, repr=False)

    def line(self, text: str | None = None) -> str:
        """``[8 May 2023, Caroline] text``; other sources name themselves:
        ``[8 May 2023, archival, notes.pdf p. 2] text``. (A day-month-year date costs 7 tokens,
        an ISO date 10: over a section of 20 memories that is another memory or two.)"""
        date = day_month_year(self.at) if self.at else "undated"
        if self.source == CONVERSATION and self.where:
            place = self.where
        else:
            place = f"{self.source}, {self.where}" if self.where else self.source
        version = f"; {self.version}" if self.version else ""
        return f"[{date}, {place}{version}] {text if text is not None else self.text}"


class MemorySource(Protocol):
    """Something automatic recall can search. ``first_in_context`` is the id of the first message
    still in the context window: a source of messages must only return older ones."""

    name: str

    def find(self, agent_id: int, query: str, *, first_in_context: int, limit: int) -> list[Memory]: ...


class ConversationSource:
    """Messages evicted from the context window (recall memory), by the conversation search."""

    name = CONVERSATION

    def __init__(self, recall: RecallMemory) -> None:
        self._recall = recall

    def find(self, agent_id: int, query: str, *, first_in_context: int, limit: int) -> list[Memory]:
        if not self._recall.has_before(agent_id, first_in_context):
            return []  # nothing evicted yet (a new agent): no need to wait for the embedding model
        ranked = self._recall.rank(agent_id, query, before_id=first_in_context)[:limit]
        messages = {m.id: m for m in self._recall.get_many([hit.id for hit in ranked])}
        found = []
        for hit in ranked:
            message = messages.get(hit.id)
            if message is None or not message.search_text.strip():
                continue
            who = message.author or ("you" if message.role == "assistant" else "user")
            if message.imported:  # said in another assistant's chat, not to this agent
                who = f"{who}, imported chat"
            text = excerpt(message.search_text, hit.part, message.created_at) if hit.part else message.search_text
            found.append(
                Memory(
                    self.name,
                    f"message:{message.id}",
                    text,
                    message.created_at,
                    who,
                    hit.score,
                    message,
                    features=hit.features,
                )
            )
        return found

    def arrange(self, agent_id: int, query: str, found: Sequence[Memory]) -> list[Memory]:
        """``found`` in the order the section shows it: the speaker the query names first
        (memdesk.core.agent.recall.speaker); the support judgement reads the ranking's order."""
        mine = [m.item.id for m in found if m.source == self.name and isinstance(m.item, Message)]
        speakers, said_by = self._recall.speakers(agent_id, mine)
        who = dict(zip(mine, said_by, strict=True))
        return named_speaker_first(
            query,
            found,
            [who.get(m.item.id, "") if isinstance(m.item, Message) else "" for m in found],
            sorted(speakers),
        )

    def support(self, agent_id: int, query: str, found: Sequence[Memory]) -> float | None:
        """How well the conversation's best hits answer ``query`` (memdesk.core.retrieval.support),
        or, when the ranking model has a judge and ranked these hits, the judge's support-like
        score (memdesk.core.retrieval.nothing_judge); below 0 either way, nothing clearly answers.
        None when this source found nothing (nothing to judge)."""
        mine = [m for m in found if m.source == self.name and isinstance(m.item, Message)]
        if not mine:
            return None
        speakers, said_by = self._recall.speakers(agent_id, [m.item.id for m in mine])
        judged = support(query, [(m.item.search_text, who) for m, who in zip(mine, said_by, strict=True)], speakers)
        scorer = self._recall.judged_by
        best = mine[:JUDGE_DEPTH]
        if scorer is None or any(m.features is None for m in best):
            return judged
        learned = scorer.nothing_support(judged, np.stack([m.features for m in best]))
        return judged if learned is None else learned


def excerpt(text: str, span: tuple[int, int], at: datetime | None) -> str:
    """The part of a long message that matched, marked as a part, with how to read the whole: a
    long message then costs the section one part, and the detail deep inside it is what shows."""
    start, end = span
    part = text[start:end].strip()
    whole = (
        f"conversation_search_date {at.date().isoformat()} shows it whole"
        if at
        else "conversation_search shows it whole"
    )
    return (
        f"{'… ' if start > 0 else ''}{part}{' …' if end < len(text) else ''} (part of a {len(text):,}-character"
        f" message; {whole})"
    )


class ArchivalSource:
    """Archival passages (the agent's notes and the user's documents), by the archival search."""

    name = "archival"

    def __init__(self, archival: ArchivalMemory) -> None:
        self._archival = archival

    def find(self, agent_id: int, query: str, *, first_in_context: int, limit: int) -> list[Memory]:
        if not self._archival.has_any(agent_id):  # not count(): that reads every row of a large memory
            return []
        found = []
        for hit in self._archival.search(agent_id, query, page_size=limit).hits:
            passage = hit.passage
            found.append(
                Memory(
                    self.name,
                    f"passage:{passage.id}",
                    passage.text,
                    passage.created_at,
                    passage.citation.label(),
                    hit.score,
                    hit,
                )
            )
        return found
