"""Assemble the prompt (stable parts first) and measure its exact per-section token budget.

Layout, top to bottom: system instructions, tool definitions, core memory (with how many messages
are hidden in recall memory and how many passages are in archival memory), the recursive summary,
then the message queue. The static parts come first so a runtime's KV cache survives most turns;
the hidden-message count changes only at eviction for the same reason.

Section sizes are differences between token counts of growing prefixes of the real prompt, counted
by the runtime's own tokenizer and template: they add up exactly to what the model receives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from desktop.core.memory.recall import Message
from desktop.core.runtime.base import ChatMessage, Runtime

SECTIONS = ("system", "tools", "core_memory", "summary", "messages", "knowledge", "free")
PRESSURE_FRACTION = 0.75
#: No single message may take more than this share of the window in context (it is truncated,
#: with a note; the full text stays in recall memory).
MESSAGE_SHARE = 0.2


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
    core_memory: str
    summary: str | None  # the summary note, or None before the first eviction
    messages: tuple[ChatMessage, ...]
    #: Live text below the message queue (the knowledge graph's top entities): it changes as
    #: the graph grows, so it goes last, where a change re-evaluates only itself.
    knowledge: str = ""

    def system_text(self, upto: str = "core_memory") -> str:
        pieces = [self.instructions]
        if upto in ("tools", "core_memory"):
            pieces.append("### Functions\nCall exactly one of these each turn:\n" + self.tools)
        if upto == "core_memory":
            pieces.append(self.core_memory)
        return "\n\n".join(pieces)

    def chat_messages(self) -> list[ChatMessage]:
        head = [ChatMessage("system", self.system_text())]
        if self.summary:
            head.append(ChatMessage("user", self.summary))
        tail = [ChatMessage("user", self.knowledge)] if self.knowledge else []
        return head + list(self.messages) + tail


def render_core_memory(blocks_text: str, hidden_messages: int, archival_count: int) -> str:
    return (
        "### Memory\n"
        f"{hidden_messages} previous messages are hidden from view but stored in recall memory (use conversation_search).\n"
        f"{archival_count} passages are stored in archival memory (use archival_memory_search).\n"
        "Core memory (always visible, editable with core_memory_append and core_memory_replace):\n"
        f"{blocks_text}"
    )


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
    cap = max(64, int(window * MESSAGE_SHARE))
    return tuple(ChatMessage(m.role, truncate_for_context(runtime, m.content, cap)) for m in messages)  # type: ignore[arg-type]


def measure(runtime: Runtime, parts: PromptParts, reserve: int) -> ContextBudget:
    window = runtime.info.context_window
    system_only = runtime.count_prompt([ChatMessage("system", parts.system_text("instructions"))])
    with_tools = runtime.count_prompt([ChatMessage("system", parts.system_text("tools"))])
    with_memory = runtime.count_prompt([ChatMessage("system", parts.system_text())])
    head = [ChatMessage("system", parts.system_text())]
    if parts.summary:
        head.append(ChatMessage("user", parts.summary))
        with_summary = runtime.count_prompt(head)
    else:
        with_summary = with_memory
    without_knowledge = replace(parts, knowledge="")
    before_knowledge = runtime.count_prompt(without_knowledge.chat_messages()) if parts.messages else with_summary
    total = runtime.count_prompt(parts.chat_messages()) if parts.knowledge else before_knowledge
    message_preview = f"{len(parts.messages)} messages in context"
    sections = (
        Section("system", system_only, parts.instructions[:400]),
        Section("tools", with_tools - system_only, parts.tools[:400]),
        Section("core_memory", with_memory - with_tools, parts.core_memory[:600]),
        Section("summary", with_summary - with_memory, (parts.summary or "no summary yet")[:600]),
        Section("messages", before_knowledge - with_summary, message_preview),
        Section("knowledge", total - before_knowledge, parts.knowledge[:600] or "no knowledge-graph entities yet"),
        Section("free", window - total, f"{window - total} tokens free of {window}"),
    )
    return ContextBudget(window, reserve, sections)
