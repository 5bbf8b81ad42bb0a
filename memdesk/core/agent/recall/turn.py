"""Automatic recall in a turn (the search itself: auto_recall.py): before a reply, memories out of
view that may matter for the user's message are gathered, room is made for them, and they are
placed right after the message (never above: the conversation's KV cache stays valid). Part of
the ``Agent``, whose context it reads."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from memdesk.core.agent.context import measure, truncate_for_context
from memdesk.core.agent.fitting import make_room
from memdesk.core.agent.recall.budget import section_tokens
from memdesk.core.agent.recall.search import EVENT_KIND as MEMORIES
from memdesk.core.agent.recall.search import RecallResult, Visible, memories_text
from memdesk.core.runtime.base import CancelToken, ChatMessage

if TYPE_CHECKING:
    from memdesk.core.agent.loop import Agent


def recall_for(agent: Agent, text: str, cancel: CancelToken | None = None) -> None:
    """Place what automatic recall finds for ``text``; ``agent.last_recall`` says how it went."""
    agent.last_recall = None
    if agent.recall is None:
        return
    # sized by what the message needs and the room the window leaves (agent.recall_budget)
    budget_tokens = section_tokens(
        text,
        measure(agent.runtime, agent._prompt_parts(), agent.settings.reserve),
        agent.recall.settings.budget_fraction,
    )
    result = _gather(agent, text, budget_tokens)
    if result.content is not None and make_room(
        agent, agent.runtime.count_prompt([ChatMessage("user", result.content)]), cancel
    ):
        # Making room took out of view what the search left out because it was in view (evicted
        # messages, the memories of expired sections): search again, so they may come back.
        again = _gather(agent, text, budget_tokens)
        result = result if again.status in ("timeout", "failed") else again  # the first still holds
    agent.last_recall = result
    if result.content is not None:
        with agent.memory.db.transaction():
            event = agent.memory.recall.add(
                agent.id, role="user", kind=MEMORIES, content=result.content, created_at=agent.memory.clock.now()
            )
            agent.shown.record(agent.id, event.id, result.memories)
        agent.observer.on_search_hits(
            [("automatic", m.item if m.item is not None else m.line()) for m in result.memories]
        )
        agent.observer.on_event("memories", memories_text(json.loads(result.content)["memories"]))
    elif result.status in ("timeout", "failed"):
        agent.observer.on_event(
            "recall",
            f"automatic recall {'timed out' if result.status == 'timeout' else 'failed'}; the reply went ahead without it",
        )


def _gather(agent: Agent, text: str, budget_tokens: int) -> RecallResult:
    assert agent.recall is not None
    record = agent.record
    in_context = agent._in_context(record)
    view, _update = agent._planned_view(record)
    shown_from = max(record.context_start_id, record.recall_expired_before)  # expired events show nothing
    visible = Visible(
        _visible_text([view.text, *(m.content for m in in_context)]), agent.shown.refs_since(agent.id, shown_from)
    )
    return agent.recall.gather(
        agent.id,
        text,
        first_in_context=record.context_start_id,
        visible=visible,
        budget_tokens=budget_tokens,
        count_tokens=agent.runtime.count_tokens,
        truncate=lambda passage, tokens: truncate_for_context(agent.runtime, passage, tokens),
        inline=agent.memory.db.in_transaction,  # a search thread would wait for the caller's transaction
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
