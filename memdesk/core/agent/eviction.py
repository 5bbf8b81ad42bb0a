"""Eviction and the recursive summary.

When the prompt would not leave room for the answer, the oldest messages leave the context window:
at least ``EVICT_FRACTION`` of the message tokens, never the last ``KEEP_LAST`` messages, and never
separating a function call from its result (the new context starts at a user-role event). The
evicted messages plus the previous summary are summarized; a transcript too long for the window is
summarized in parts first. Evicted messages stay in recall memory.
"""

from __future__ import annotations

from collections.abc import Sequence

from memdesk.core.memory.recall import Message
from memdesk.core.runtime.base import CancelToken, ChatMessage, Runtime, SamplingParams, TextRequest

KEEP_LAST = 3
EVICT_FRACTION = 0.75
#: Where a context may start: an event that opens a turn (a memory_update comes right before one;
#: an automatic-recall "memories" event belongs to the user message before it, so never).
STARTS_A_TURN = {"user_message", "login", "heartbeat", "system_alert", "memory_update"}


def choose_cut(messages: Sequence[Message], token_counts: Sequence[int], *, need: int) -> int:
    """Index of the first message that stays in context (0 means nothing can be evicted).

    ``need`` is how many message tokens must go at least; EVICT_FRACTION of them go anyway, so
    eviction happens rarely and the KV cache survives between evictions.
    """
    total = sum(token_counts)
    target = max(need, int(total * EVICT_FRACTION))
    evicted = 0
    best = 0
    for index in range(1, len(messages) - KEEP_LAST + 1):
        evicted += token_counts[index - 1]
        if messages[index].kind in STARTS_A_TURN:
            best = index
            if evicted >= target:
                break
    return best


def transcript_lines(messages: Sequence[Message]) -> list[str]:
    return [f"{m.role}: {m.content}" for m in messages]


class Summarizer:
    def __init__(self, runtime: Runtime, prompt: str, params: SamplingParams, reserve: int) -> None:
        self._runtime = runtime
        self._prompt = prompt
        self._params = params
        self._reserve = reserve

    def summarize(self, previous_summary: str, messages: Sequence[Message], cancel: CancelToken | None = None) -> str:
        lines = (
            [f"Summary of even earlier messages: {previous_summary}"] if previous_summary else []
        ) + transcript_lines(messages)
        return self._summarize_lines(lines, cancel)

    def _fits(self, text: str) -> bool:
        prompt = [ChatMessage("system", self._prompt), ChatMessage("user", text)]
        return self._runtime.count_prompt(prompt) + self._reserve <= self._runtime.info.context_window

    def _summarize_lines(self, lines: list[str], cancel: CancelToken | None) -> str:
        text = "\n".join(lines)
        if self._fits(text):
            return self._ask(text, cancel)
        # Too long for one call: summarize parts that fit, then summarize the summaries.
        parts: list[str] = []
        current: list[str] = []
        for line in lines:
            if not self._fits(line):
                line = self._shrink(line)
            if current and not self._fits("\n".join(current + [line])):
                parts.append(self._ask("\n".join(current), cancel))
                current = []
            current.append(line)
        if current:
            parts.append(self._ask("\n".join(current), cancel))
        return self._summarize_lines(parts, cancel) if len(parts) > 1 else parts[0]

    def _shrink(self, line: str) -> str:
        while len(line) > 200 and not self._fits(line):
            line = line[: len(line) // 2] + " [...]"
        return line

    def _ask(self, text: str, cancel: CancelToken | None) -> str:
        prompt = [ChatMessage("system", self._prompt), ChatMessage("user", text)]
        return self._runtime.generate_text(TextRequest(prompt, self._params), cancel=cancel).strip()
