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

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from memdesk.core.agent.recall.events import NOTE, NOTHING_NOTE, render_event
from memdesk.core.agent.recall.packing import pack
from memdesk.core.agent.recall.sources import CONVERSATION, Memory, MemorySource
from memdesk.core.base.log_privacy import where_it_failed
from memdesk.core.base.settings_table import Settings
from memdesk.core.retrieval.support import NOTHING_BELOW

log = logging.getLogger("memdesk.agent.recall")

#: One memory takes at most this share of the section's budget (a long passage is cut).
ITEM_SHARE = 0.4
#: Characters of a hit compared with the visible conversation to tell whether it is there already.
VISIBLE_PROBE = 160


@dataclass(frozen=True)
class RecallSettings:
    """Those that are settings (measured where declared: memdesk/core/base/settings_table.py) have
    no default here: ``from_settings`` takes them from a ``Settings``."""

    enabled: bool
    budget_fraction: float  # of the context window
    timeout_ms: int  # the reply never waits longer for the search
    # The section is filled in rank order until its budget is spent (measured on LoCoMo: at 8192
    # tokens, five hits left most of the budget unused and found the evidence for 0.55 of the
    # tuning questions; filling it, 0.71). ``max_hits`` only bounds a budget of short memories.
    max_hits: int = 60
    # Candidates asked of each source: all the conversation search keeps (its SEARCH_DEPTH). With 60,
    # a question's larger section found nothing more to show: the rest of the 60 were in view already.
    per_source: int = 100

    @classmethod
    def from_settings(cls, settings: Settings) -> RecallSettings:
        return cls(settings.auto_recall, settings.auto_recall_budget, settings.auto_recall_timeout_ms)


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


class AutoRecall:
    def __init__(
        self,
        sources: Sequence[MemorySource],
        settings: RecallSettings,
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
