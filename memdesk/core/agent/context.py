"""Assemble the prompt and measure its exact per-section token budget.

Layout, top to bottom:

1. the system message: instructions and tool definitions. It never changes between turns (the
   ``static_prefix``), so its KV state can be saved on disk and loaded at start-up;
2. the memory section: core memory with how many messages are out of view and how many passages
   are in archival memory, then the recursive summary. It is rendered at a refresh and then kept
   stable (see ``memory_view``), so a memory edit does not invalidate the cache of what follows;
3. the message queue, where later memory changes arrive as messages: the agent's own edit calls,
   ``memory_update`` events for anybody else's; and the memories automatic recall found for a
   user message, right after it (``auto_recall``), measured as their own section "recall".

Section sizes are differences between token counts of growing prefixes of the real prompt, counted
by the runtime's own tokenizer and template: they add up exactly to what the model receives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memdesk.core.memory.recall import Message
from memdesk.core.runtime.base import ChatMessage, Runtime

SECTIONS = ("system", "tools", "core_memory", "knowledge", "summary", "messages", "recall", "free")
PRESSURE_FRACTION = 0.75
#: No single message may take more than this share of the window in context (it is truncated,
#: with a note; the full text stays in recall memory).
MESSAGE_SHARE = 0.2
#: automatic recall's event kind (memdesk.core.agent.recall.events.EVENT_KIND), budgeted on its own
MEMORIES_KIND = "memories"


@dataclass(frozen=True)
class Section:
    name: str
    tokens: int
    preview: str  # what the section holds, for the budget panel's tooltip


@dataclass(frozen=True)
class ContextBudget:
    window: int
    reserve: int  # tokens kept free for the model's answer
    sections: tuple[Section, ...]

    @property
    def used(self) -> int:
        return sum(s.tokens for s in self.sections if s.name != "free")

    @property
    def free(self) -> int:
        return self.window - self.used

    @property
    def fraction(self) -> float:
        return self.used / self.window if self.window else 0.0

    @property
    def warning_at(self) -> int:
        return int(self.window * PRESSURE_FRACTION)

    @property
    def eviction_at(self) -> int:
        """Prompt size beyond which the next call would not leave room for the answer."""
        return self.window - self.reserve

    def tokens(self, name: str) -> int:
        return next((s.tokens for s in self.sections if s.name == name), 0)

    def as_dict(self) -> dict:
        return {
            "window": self.window,
            "used": self.used,
            "free": self.free,
            "warning_at": self.warning_at,
            "eviction_at": self.eviction_at,
            "sections": {s.name: s.tokens for s in self.sections},
        }

    def describe(self) -> str:
        parts = " | ".join(f"{s.name} {s.tokens}" for s in self.sections)
        return f"context {self.used}/{self.window} tokens ({self.fraction:.0%}): {parts}"


@dataclass(frozen=True)
class PromptParts:
    instructions: str
    tools: str
    core_memory: str  # the memory section as rendered at its last refresh
    summary: str | None  # the summary note, or None before the first eviction
    messages: tuple[ChatMessage, ...]
    #: The knowledge graph's top entities, rendered with the memory section (a hint that may lag
    #: until the next refresh: below the queue it would cost its own tokens again every step).
    knowledge: str = ""
    #: Positions in ``messages`` of automatic-recall events (measured as their own section).
    recall: frozenset[int] = frozenset()

    def system_text(self, with_tools: bool = True) -> str:
        if not with_tools:
            return self.instructions
        return self.instructions + "\n\n### Functions\nCall exactly one of these each turn:\n" + self.tools

    def static_messages(self) -> list[ChatMessage]:
        """What never changes between turns: the runtime may keep its KV state on disk."""
        return [ChatMessage("system", self.system_text())]

    def memory_message(self, upto: str = "summary") -> ChatMessage:
        """The memory section: core memory, then (``upto`` "knowledge" or "summary") the top
        entities, then (``upto`` "summary") the summary note. A user-role message: many chat
        templates refuse a second system message."""
        pieces = [self.core_memory]
        if upto in ("knowledge", "summary") and self.knowledge:
            pieces.append(self.knowledge)
        if upto == "summary" and self.summary:
            pieces.append(self.summary)
        return ChatMessage("user", "\n\n".join(pieces))

    def chat_messages(self) -> list[ChatMessage]:
        return [*self.static_messages(), self.memory_message(), *self.messages]


def truncate_for_context(runtime: Runtime, text: str, max_tokens: int) -> str:
    """Cut ``text`` to ``max_tokens`` and say so; the full text stays in the store."""
    if runtime.count_tokens(text) <= max_tokens:
        return text
    note = f"\n[... truncated: {len(text)} characters in all; the full text is kept in recall memory]"
    budget = max_tokens - runtime.count_tokens(note)
    low, high = 0, len(text)
    while low < high:  # longest prefix that fits, by binary search on characters
        middle = (low + high + 1) // 2
        if runtime.count_tokens(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low] + note


def to_chat(runtime: Runtime, messages: Sequence[Message], window: int) -> tuple[ChatMessage, ...]:
    """The messages as the model sees them. A memories event is not cut: automatic recall sized it
    to its own budget, which may exceed MESSAGE_SHARE (a question's section), and a cut would drop
    whole memories from the middle of it."""
    cap = max(64, int(window * MESSAGE_SHARE))
    return tuple(
        # The store keeps roles as text; RecallMemory writes only the three chat roles.
        ChatMessage(m.role, m.content if m.kind == MEMORIES_KIND else truncate_for_context(runtime, m.content, cap))  # type: ignore[arg-type]
        for m in messages
    )


def measure(runtime: Runtime, parts: PromptParts, reserve: int) -> ContextBudget:
    window = runtime.info.context_window
    static = parts.static_messages()
    system_only = runtime.count_prompt([ChatMessage("system", parts.system_text(with_tools=False))])
    with_tools = runtime.count_prompt(static)
    with_memory = runtime.count_prompt([*static, parts.memory_message("core")])
    with_knowledge = (
        runtime.count_prompt([*static, parts.memory_message("knowledge")]) if parts.knowledge else with_memory
    )
    with_summary = runtime.count_prompt([*static, parts.memory_message()]) if parts.summary else with_knowledge
    total = runtime.count_prompt(parts.chat_messages()) if parts.messages else with_summary
    if parts.recall:
        kept = [m for n, m in enumerate(parts.messages) if n not in parts.recall]
        without_recall = runtime.count_prompt([*static, parts.memory_message(), *kept]) if kept else with_summary
    else:
        without_recall = total
    recalled = [m for n, m in enumerate(parts.messages) if n in parts.recall]
    recall_preview = "\n".join(m.content for m in recalled)[-600:] or "no memories recalled automatically in context"
    message_preview = f"{len(parts.messages) - len(recalled)} messages in context"
    sections = (
        Section("system", system_only, parts.instructions[:400]),
        Section("tools", with_tools - system_only, parts.tools[:400]),
        Section("core_memory", with_memory - with_tools, parts.core_memory[:600]),
        Section("knowledge", with_knowledge - with_memory, parts.knowledge[:600] or "no knowledge-graph entities yet"),
        Section("summary", with_summary - with_knowledge, (parts.summary or "no summary yet")[:600]),
        Section("messages", without_recall - with_summary, message_preview),
        Section("recall", total - without_recall, recall_preview),
        Section("free", window - total, f"{window - total} tokens free of {window}"),
    )
    return ContextBudget(window, reserve, sections)


def tool_costs(runtime: Runtime, descriptions: dict[str, str]) -> dict[str, int]:
    """Tokens each tool's description adds to the tools section (the issue's per-tool measure)."""
    return {name: runtime.count_tokens("\n" + text) for name, text in descriptions.items()}
