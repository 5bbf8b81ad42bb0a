"""Automatic recall in a turn (the search itself: search.py): before a reply, memories out of
view that may matter for the user's message are gathered, room is made for them, and they are
placed right after the message (never above: the conversation's KV cache stays valid). It reads
the context through the agent's ``PromptState`` and makes room through its ``ContextFitting``."""

from __future__ import annotations

import json
from typing import Any

from memdesk.core.agent.context import truncate_for_context
from memdesk.core.agent.fitting import ContextFitting
from memdesk.core.agent.observer import AgentObserver
from memdesk.core.agent.prompt_state import PromptState
from memdesk.core.agent.recall.budget import section_tokens
from memdesk.core.agent.recall.events import EVENT_KIND as MEMORIES
from memdesk.core.agent.recall.events import memories_text
from memdesk.core.agent.recall.search import AutoRecall, RecallResult, Visible
from memdesk.core.agent.recall.shown import ShownMemories
from memdesk.core.runtime.base import CancelToken, ChatMessage


def recall_for(
    recall: AutoRecall,
    text: str,
    cancel: CancelToken | None = None,
    *,
    prompt: PromptState,
    fitting: ContextFitting,
    shown: ShownMemories,
    observer: AgentObserver,
) -> RecallResult:
    """Place what automatic recall finds for ``text`` in the prompt; how it went."""
    # sized by what the message needs and the room the window leaves (agent.recall_budget)
    budget_tokens = section_tokens(text, prompt.budget(), recall.settings.budget_fraction)
    result = _gather(recall, prompt, shown, text, budget_tokens)
    if result.content is not None and fitting.make_room(
        prompt.runtime.count_prompt([ChatMessage("user", result.content)]), cancel
    ):
        # Making room took out of view what the search left out because it was in view (evicted
        # messages, the memories of expired sections): search again, so they may come back.
        again = _gather(recall, prompt, shown, text, budget_tokens)
        result = result if again.status in ("timeout", "failed") else again  # the first still holds
    memory = prompt.memory
    if result.content is not None:
        with memory.db.transaction():
            event = memory.recall.add(
                prompt.agent_id, role="user", kind=MEMORIES, content=result.content, created_at=memory.clock.now()
            )
            shown.record(prompt.agent_id, event.id, result.memories)
        observer.on_search_hits([("automatic", m.item if m.item is not None else m.line()) for m in result.memories])
        observer.on_event("memories", memories_text(json.loads(result.content)["memories"]))
    elif result.status in ("timeout", "failed"):
        what = "took too long" if result.status == "timeout" else "failed"
        observer.on_event("recall", f"searching its memory {what}; it answered without it")
    return result


def preview(recall: AutoRecall, text: str, *, prompt: PromptState, shown: ShownMemories) -> tuple[RecallResult, int]:
    """What ``recall_for`` would place for ``text`` now, and the section's budget in tokens,
    without placing it, making room or waiting on the deadline: nothing is written (another app
    asking what the agent would have in front of it)."""
    budget_tokens = section_tokens(text, prompt.budget(), recall.settings.budget_fraction)
    return _gather(recall, prompt, shown, text, budget_tokens, inline=True), budget_tokens


def _gather(
    recall: AutoRecall,
    prompt: PromptState,
    shown: ShownMemories,
    text: str,
    budget_tokens: int,
    *,
    inline: bool = False,
) -> RecallResult:
    record = prompt.record
    in_context = prompt.in_context(record)
    view, _update = prompt.planned_view(record)
    shown_from = max(record.context_start_id, record.recall_expired_before)  # expired events show nothing
    visible = Visible(
        _visible_text([view.text, *(m.content for m in in_context)]), shown.refs_since(prompt.agent_id, shown_from)
    )
    runtime = prompt.runtime
    return recall.gather(
        prompt.agent_id,
        text,
        first_in_context=record.context_start_id,
        visible=visible,
        budget_tokens=budget_tokens,
        count_tokens=runtime.count_tokens,
        truncate=lambda passage, tokens: truncate_for_context(runtime, passage, tokens),
        # a search thread would wait for the caller's transaction
        inline=inline or prompt.memory.db.in_transaction,
    )


def _visible_text(contents: list[str]) -> str:
    """The text the model sees, normalised, with JSON events decoded (their strings are escaped)."""
    pieces: list[str] = []

    def collect(value: Any) -> None:
        if isinstance(value, str):
            pieces.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    for content in contents:
        try:
            collect(json.loads(content))
        except (ValueError, TypeError):
            pieces.append(content)
    return " ".join(" ".join(pieces).split()).casefold()
