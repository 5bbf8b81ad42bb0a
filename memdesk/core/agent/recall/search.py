"""Automatic recall: memories found for the model before it answers a user message.

MemGPT leaves every search to the model, and small local models rarely search. So before the
first step of a turn, the user's message is run against what is *not* in the context window
(messages evicted to recall memory, archival passages; more sources plug in through
``MemorySource``) with the same hybrid search the tools use, and the few best hits, with dates and
sources, are placed in a budgeted ``memories`` event right after the user's message:

* it is appended to the queue, so the KV cache of everything above it stays valid, and it stays
  in the queue like any message (later turns keep it cached too, until it is evicted);
* hits already visible in the queue (the same text, or shown by an earlier memories event still
  in context) are not repeated;
* the search runs under a deadline: when it fails or is slow the reply goes ahead without the
  event and the failure is logged;
* which memories were shown is stored with the event (``ShownMemories``), so the transcript can
  say what a reply had in front of it;
* an eviction expires the older events: the cache below the memory section is evaluated again
  then anyway, so every memories event but the newest is shown from then on as a one-line stub
  (``EXPIRED``; the full event stays stored). Between evictions nothing above the newest message
  changes, and old sections no longer crowd the conversation out of the window.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from memdesk.core.agent.failure_log import where_it_failed
from memdesk.core.agent.recall.packing import pack
from memdesk.core.agent.recall.speaker import named_speaker_first
from memdesk.core.base.clock import day_month_year, iso, parse_iso
from memdesk.core.base.settings_table import DEFAULTS
from memdesk.core.memory.archival import ArchivalMemory
from memdesk.core.memory.recall import Message, RecallMemory
from memdesk.core.retrieval.support import NOTHING_BELOW, support
from memdesk.core.storage import Database

log = logging.getLogger("memdesk.agent.recall")

EVENT_KIND = "memories"
CONVERSATION = "conversation"
NOTE = "found automatically for the message above; they may not be relevant"
#: The note when none of them clears the support bar (memdesk.core.retrieval.support): said
#: plainly, so a model can answer "I don't remember that" instead of inventing an answer.
NOTHING_NOTE = "found automatically for the message above; none of them clearly answers it: if it asks about the past, say you do not remember"
#: One memory takes at most this share of the section's budget (a long passage is cut).
ITEM_SHARE = 0.4
#: What an expired memories event shows the model (its memories are still in the store).
EXPIRED = json.dumps({"type": EVENT_KIND, "note": "expired; search your memory to see them again"})
#: Characters of a hit compared with the visible conversation to tell whether it is there already.
VISIBLE_PROBE = 160


@dataclass(frozen=True)
class RecallSettings:
    # Defaults: the declared settings' (measured where declared: memdesk/core/base/settings_table.py).
    enabled: bool = DEFAULTS.auto_recall
    budget_fraction: float = DEFAULTS.auto_recall_budget  # of the context window
    timeout_ms: int = DEFAULTS.auto_recall_timeout_ms  # the reply never waits longer for the search
    # The section is filled in rank order until its budget is spent (measured on LoCoMo: at 8192
    # tokens, five hits left most of the budget unused and found the evidence for 0.55 of the
    # tuning questions; filling it, 0.71). ``max_hits`` only bounds a budget of short memories.
    max_hits: int = 60
    # Candidates asked of each source: all the conversation search keeps (its SEARCH_DEPTH). With 60,
    # a question's larger section found nothing more to show: the rest of the 60 were in view already.
    per_source: int = 100


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
            text = excerpt(message.search_text, hit.part, message.created_at) if hit.part else message.search_text
            found.append(Memory(self.name, f"message:{message.id}", text, message.created_at, who, hit.score, message))
        return found

    def arrange(self, agent_id: int, query: str, found: Sequence[Memory]) -> list[Memory]:
        """``found`` in the order the section shows it: the speaker the query names first
        (memdesk.core.agent.recall.speaker); the support judgement reads the ranking's order."""
        mine = [m.item.id for m in found if m.source == self.name and isinstance(m.item, Message)]
        speakers, said_by = self._recall.speakers(agent_id, mine)
        who = dict(zip(mine, said_by))
        return named_speaker_first(
            query,
            found,
            [who.get(m.item.id, "") if isinstance(m.item, Message) else "" for m in found],
            sorted(speakers),
        )

    def support(self, agent_id: int, query: str, found: Sequence[Memory]) -> float | None:
        """How well the conversation's best hits answer ``query`` (memdesk.core.retrieval.support);
        None when this source found nothing (nothing to judge)."""
        mine = [m for m in found if m.source == self.name and isinstance(m.item, Message)]
        if not mine:
            return None
        speakers, said_by = self._recall.speakers(agent_id, [m.item.id for m in mine])
        return support(query, [(m.item.search_text, who) for m, who in zip(mine, said_by)], speakers)


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
    return f"{'… ' if start > 0 else ''}{part}{' …' if end < len(text) else ''} (part of a {len(text):,}-character message; {whole})"


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


@dataclass(frozen=True)
class Visible:
    """What the model already sees: the queue's text and the refs shown by memories events in it."""

    text: str = ""
    refs: frozenset[str] = frozenset()

    def shows(self, memory: Memory) -> bool:
        if memory.ref in self.refs:
            return True
        probe = _normal(memory.text)[:VISIBLE_PROBE]
        return bool(probe) and probe in self.text


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class RecallResult:
    status: str  # "placed", "nothing" (no hit worth showing), "timeout", "failed", "off"
    memories: tuple[Memory, ...] = ()
    content: str | None = None  # the event's JSON, None when nothing is placed
    seconds: float = 0.0
    support: float | None = None  # how well the best conversation hits answer the message (None: not judged)

    @property
    def nothing_clear(self) -> bool:
        """Nothing found clears the support bar: the event says so."""
        return self.support is not None and self.support < NOTHING_BELOW


def memories_text(lines: Sequence[str]) -> str:
    """How people read a memories event (the transcript, the CLI)."""
    return "Memories found automatically:\n" + "\n".join(f"- {line}" for line in lines)


def newest_event_id(messages: Sequence[Message], default: int) -> int:
    """The id of the newest memories event in ``messages`` (``default`` when there is none): at
    an eviction, every memories event older than it expires."""
    return max((m.id for m in messages if m.kind == EVENT_KIND), default=default)


def expired_view(messages: Sequence[Message], expired_before: int) -> list[Message]:
    """``messages`` as the model sees them: memories events older than ``expired_before`` are a
    stub (``EXPIRED``)."""
    return [replace(m, content=EXPIRED) if m.kind == EVENT_KIND and m.id < expired_before else m for m in messages]


def render_event(lines: Sequence[str], note: str = NOTE) -> str:
    return json.dumps({"type": EVENT_KIND, "note": note, "memories": list(lines)}, ensure_ascii=False)


class AutoRecall:
    def __init__(
        self,
        sources: Sequence[MemorySource],
        settings: RecallSettings = RecallSettings(),
        order: Callable[[str, list[Memory]], list[Memory]] = lambda query, found: found,
    ) -> None:
        """``order``: rearranges the hits before they are fitted (the app passes
        recall_versions.newest_first: two versions of one fact, newest first and marked)."""
        self.sources = list(sources)
        self.settings = settings
        self._order = order
        self._executor: ThreadPoolExecutor | None = None
        self._source_pool: ThreadPoolExecutor | None = None

    def add_source(self, source: MemorySource) -> None:
        """Another kind of memory to search (the knowledge graph, say)."""
        self.sources.append(source)

    # --- searching -------------------------------------------------------------------------
    def search(self, agent_id: int, query: str, *, first_in_context: int, parallel: bool = False) -> list[Memory]:
        """Every source's best hits, merged by rank (scores of different sources do not compare):
        the first of each source, then the second of each, and so on. ``parallel`` searches the
        sources at once, each in its own thread (their array work runs side by side; the store
        serialises their statements): not from inside a transaction of the store, which the
        other threads would wait for."""

        def find(source: MemorySource) -> list[Memory]:
            return source.find(agent_id, query, first_in_context=first_in_context, limit=self.settings.per_source)

        if parallel and len(self.sources) > 1:
            if self._source_pool is None:
                self._source_pool = ThreadPoolExecutor(
                    max_workers=len(self.sources) - 1, thread_name_prefix="auto-recall-source"
                )
            others = [self._source_pool.submit(find, source) for source in self.sources[1:]]
            ranked = [find(self.sources[0])] + [future.result() for future in others]
        else:
            ranked = [find(source) for source in self.sources]
        merged: list[Memory] = []
        for depth in range(max((len(r) for r in ranked), default=0)):
            merged.extend(r[depth] for r in ranked if depth < len(r))
        return merged

    def search_with_support(
        self, agent_id: int, query: str, *, first_in_context: int, parallel: bool = False
    ) -> tuple[list[Memory], float | None]:
        """``search``, and how well its hits answer the query (judged by the sources that can:
        the conversation; the lowest of their judgements); the hits then in ``order`` (inside
        the deadline: ordering compares their texts)."""
        found = self.search(agent_id, query, first_in_context=first_in_context, parallel=parallel)
        judged = [
            j
            for j in (s.support(agent_id, query, found) for s in self.sources if hasattr(s, "support"))
            if j is not None
        ]
        for source in self.sources:  # a source may reorder its hits (the named speaker first)
            if hasattr(source, "arrange"):
                found = source.arrange(agent_id, query, found)
        return self._order(query, found), (min(judged) if judged else None)

    def gather(
        self,
        agent_id: int,
        query: str,
        *,
        first_in_context: int,
        visible: Visible,
        budget_tokens: int,
        count_tokens: Callable[[str], int],
        truncate: Callable[[str, int], str],
        inline: bool = False,
    ) -> RecallResult:
        """Search under the deadline, drop what the model sees already, and fit the best hits in
        ``budget_tokens`` (counted with the model's tokenizer). ``inline`` searches in the calling
        thread, without a deadline: for a caller inside a transaction of the store (an
        evaluation's rolled-back question), which a search thread would wait for."""
        settings = self.settings
        if not settings.enabled or not self.sources or not query.strip() or budget_tokens <= 0:
            return RecallResult("off")
        started = time.perf_counter()
        try:
            if inline:
                found, judged = self.search_with_support(agent_id, query, first_in_context=first_in_context)
            else:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="auto-recall")
                future = self._executor.submit(
                    self.search_with_support, agent_id, query, first_in_context=first_in_context, parallel=True
                )
                found, judged = future.result(timeout=settings.timeout_ms / 1000)
        except FutureTimeout:
            log.warning("automatic recall took over %s ms: the reply goes ahead without it", settings.timeout_ms)
            return RecallResult("timeout", seconds=time.perf_counter() - started)
        except Exception as error:  # a broken source must never stop the reply
            log.error("automatic recall failed (the reply goes ahead without it): %s", where_it_failed(error))
            return RecallResult("failed", seconds=time.perf_counter() - started)
        note = NOTHING_NOTE if judged is not None and judged < NOTHING_BELOW else NOTE
        placed, lines = self._fit(found, visible, budget_tokens, count_tokens, truncate, note)
        seconds = time.perf_counter() - started
        if not placed:
            return RecallResult("nothing", seconds=seconds, support=judged)
        return RecallResult("placed", tuple(placed), render_event(lines, note), seconds, judged)

    def _fit(
        self, found, visible: Visible, budget: int, count_tokens, truncate, note: str = NOTE
    ) -> tuple[list[Memory], list[str]]:
        """The best hits, in rank order, that fit ``budget`` together, a day's conversation on one
        line (memdesk.core.agent.recall.packing); what the model sees already, or a repeat, is left out."""
        seen: set[str] = set()

        def skip(memory: Memory) -> bool:
            key = _normal(memory.text)
            if not key or key in seen or visible.shows(memory):
                return True
            seen.add(key)
            return False

        return pack(
            found,
            skip=skip,
            budget=budget,
            item_tokens=max(16, int(budget * ITEM_SHARE)),
            max_hits=self.settings.max_hits,
            grouped_source=CONVERSATION,
            count_tokens=count_tokens,
            truncate=truncate,
            render=lambda lines: render_event(lines, note),
        )

    def close(self) -> None:
        for pool in (self._executor, self._source_pool):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        self._executor = self._source_pool = None


@dataclass(frozen=True)
class ShownMemory:
    event_id: int  # the memories event (a message row) that showed it
    position: int
    source: str
    ref: str
    at: datetime | None
    where: str
    text: str


class ShownMemories:
    """Which memories each memories event showed: the transcript's "what this reply had in front
    of it", and the refs not to show again while the event is in context."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def record(self, agent_id: int, event_id: int, memories: Sequence[Memory]) -> None:
        self.db.executemany(
            "INSERT INTO recall_shown(agent_id, event_id, position, source, ref, at, place, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (agent_id, event_id, n, m.source, m.ref, iso(m.at) if m.at else None, m.where, m.text)
                for n, m in enumerate(memories)
            ],
        )

    def refs_since(self, agent_id: int, first_event_id: int) -> frozenset[str]:
        rows = self.db.query(
            "SELECT ref FROM recall_shown WHERE agent_id = ? AND event_id >= ?", (agent_id, first_event_id)
        )
        return frozenset(r[0] for r in rows)

    def shown_by(self, event_id: int) -> list[ShownMemory]:
        rows = self.db.query(
            "SELECT event_id, position, source, ref, at, place, text FROM recall_shown WHERE event_id = ? ORDER BY position",
            (event_id,),
        )
        return [ShownMemory(r[0], r[1], r[2], r[3], parse_iso(r[4]) if r[4] else None, r[5], r[6]) for r in rows]
