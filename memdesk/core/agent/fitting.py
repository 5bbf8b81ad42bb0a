"""Fitting the prompt into the context window: before a step, and before automatic recall places
its section, the oldest messages are evicted and folded into the recursive summary (the cut and
the summary itself: eviction.py). It reads and changes the prompt through the agent's ``PromptState``."""

from __future__ import annotations

import logging

from memdesk.core.agent import events
from memdesk.core.agent.context import ContextBudget, to_chat
from memdesk.core.agent.eviction import Summarizer, choose_cut
from memdesk.core.agent.observer import AgentObserver
from memdesk.core.agent.prompt_state import PromptState
from memdesk.core.agent.recall.events import EVENT_KIND as MEMORIES
from memdesk.core.agent.recall.events import expired_view, newest_event_id
from memdesk.core.base.errors import ContextOverflowError
from memdesk.core.memory.recall import Message
from memdesk.core.runtime.base import CancelToken

log = logging.getLogger("memdesk.agent")


class ContextFitting:
    """Keeps one agent's prompt inside its context window: evicts into the summary (``summarizer``)
    and expires earlier memories sections, reporting evictions to ``observer``."""

    def __init__(self, prompt: PromptState, summarizer: Summarizer, observer: AgentObserver) -> None:
        self.prompt = prompt
        self.summarizer = summarizer
        self.observer = observer

    def ensure_fits(self, cancel: CancelToken | None) -> None:
        """Evict (and summarize) until the prompt leaves room for the answer."""
        for _attempt in range(4):
            budget = self.prompt.budget()
            if budget.used <= budget.eviction_at:
                return
            if not self.evict(budget, cancel):
                break
        budget = self.prompt.budget()
        if budget.used > budget.eviction_at:
            raise ContextOverflowError(
                f"The prompt needs {budget.used} tokens but the context window is {budget.window} "
                f"with {budget.reserve} kept for the answer",
                hint="raise the context size in Settings or shorten the core memory blocks",
            )

    def make_room(self, room: int, cancel: CancelToken | None) -> bool:
        """Expire the earlier memories sections, then evict if that is not enough, until a new section
        of ``room`` tokens fits before the eviction point, if possible (the loop's own check still runs
        before each step). Every memories event already in context expires: the new one will be the
        newest. Whether anything left the model's view (what it showed may be found again)."""
        changed = False
        for attempt in range(4):
            budget = self.prompt.budget()
            if budget.used + room <= budget.eviction_at:
                break
            if attempt == 0 and self.expire_sections(budget, room):
                changed = True
                continue
            if not self.evict(budget, cancel, room=room):
                break
            changed = True
        return changed

    def expire_sections(self, budget: ContextBudget, room: int) -> bool:
        """Make room for a new memories section by expiring the earlier ones alone, when that frees
        enough: nothing of the conversation leaves and no summary is written. In a small window a
        question's section takes most of the room, so the section before it was what an eviction
        mostly freed (LoCoMo at 4,096 tokens: an eviction, with its summarizing call, about every
        second exchange). The messages below the first expired section are evaluated again, as after
        an eviction. Whether it did."""
        record = self.prompt.record
        shown = self.prompt.in_context(record)
        expire = _expire_point(shown, record.recall_expired_before, room)
        if expire <= record.recall_expired_before:
            return False
        freed = self._freed_by_expiry(shown, expire, budget.window)
        if budget.used + room - freed > budget.eviction_at:
            return False
        self.prompt.memory.agents.update(self.prompt.agent_id, recall_expired_before=expire)
        log.info("agent %s expired earlier memories sections instead of evicting", self.prompt.agent_id)
        return True

    def _freed_by_expiry(self, shown: list[Message], expire: int, window: int) -> int:
        runtime = self.prompt.runtime
        in_context = expired_view(shown, expire)
        changed = [(m, a) for m, a in zip(shown, in_context, strict=True) if m.content != a.content]
        before = to_chat(runtime, [m for m, _a in changed], window)
        after = to_chat(runtime, [a for _m, a in changed], window)
        return sum(runtime.count_tokens(c.content) for c in before) - sum(
            runtime.count_tokens(c.content) for c in after
        )

    def evict(self, budget: ContextBudget, cancel: CancelToken | None, *, room: int = 0) -> bool:
        record = self.prompt.record
        m = self.prompt.memory
        runtime = self.prompt.runtime
        shown = self.prompt.in_context(record)
        # The cache below the memory section is evaluated again after an eviction anyway: the earlier
        # memories events expire now, and what that frees counts toward the need.
        expire = _expire_point(shown, record.recall_expired_before, room)
        in_context = expired_view(shown, expire)
        chats = to_chat(runtime, in_context, budget.window)
        counts = [runtime.count_tokens(c.content) + 4 for c in chats]
        freed = self._freed_by_expiry(shown, expire, budget.window)
        need = budget.used + room - freed - budget.eviction_at
        cut = choose_cut(in_context, counts, need=need)
        if cut == 0 and len(in_context) > 1 and not room:
            # Not even KEEP_LAST messages fit with room to answer: keep fewer rather than fail.
            for index in range(len(in_context) - 1, 0, -1):
                if in_context[index].kind in ("user_message", "login", "heartbeat", "system_alert"):
                    cut = index
                    break
        if cut == 0 and freed <= 0:
            return False
        evicted = in_context[:cut]
        previous = _summary_body(record.summary)
        # Memories events repeat older messages (already summarized when they left): not conversation.
        conversation = [e for e in evicted if e.kind != MEMORIES]
        summary = self.summarizer.summarize(previous, conversation, cancel) if conversation else previous
        hidden = record.evicted_count + len(evicted)
        total = m.recall.count(self.prompt.agent_id)
        with m.db.transaction():
            m.agents.update(
                self.prompt.agent_id,
                summary=events.summary_note(hidden, total, summary) if evicted else record.summary,
                context_start_id=in_context[cut].id,
                evicted_count=hidden,
                recall_expired_before=expire,
                pressure_alert_sent=False,
                # Everything below the memory section is evaluated again anyway: render it afresh.
                memory_view="",
            )
            self.prompt.sync_memory()
            # The alert comes again only once the context has room again: when what stays is
            # still above the warning line (a small window), another alert would only add a step.
            after = self.prompt.budget()
            m.agents.update(self.prompt.agent_id, pressure_alert_sent=after.used >= after.warning_at)
        log.info("agent %s evicted %s messages (keeping %s)", self.prompt.agent_id, len(evicted), len(in_context) - cut)
        self.observer.on_event("eviction", summary)
        return True


def _expire_point(shown: list[Message], expired_before: int, room: int) -> int:
    """Every memories event but the newest expires (all of them when a new one is about to be
    placed: ``room``)."""
    newest = newest_event_id(shown, expired_before)
    return max(expired_before, newest + 1 if room and newest >= expired_before else newest)


def _summary_body(note: str) -> str:
    marker = "summary of the previous"
    if marker in note:
        return note.split(":\n", 1)[-1]
    return note
