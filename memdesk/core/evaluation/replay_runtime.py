"""A runtime for replaying a recorded conversation through the real agent.

Tokens are counted by another runtime (the active model's, so the window fills and evicts exactly
as it would for that model), while the agent's side of the conversation comes from the recording:
each ``generate_call`` answers with the reply queued by the replay. Summaries of evicted messages
are a fixed placeholder, so an evaluation that looks for conversation turns in the prompt can only
find them where the agent really put them (the message queue, or a section the agent fills), never
in a paraphrase.

``live`` passes every call to the counting runtime instead: the replayed agent then answers with
the real model (the answer evaluation). Every prompt sent to ``generate_call`` is kept in
``prompts`` until ``forget_prompts``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from memdesk.core.runtime.base import (
    CallRequest,
    CancelToken,
    ChatMessage,
    ModelTurn,
    Runtime,
    RuntimeInfo,
    StreamCallback,
    TextRequest,
)
from memdesk.core.runtime.scripted import call, say

#: What an eviction's summary says during a replay (deliberately free of conversation content).
PLACEHOLDER_SUMMARY = "Earlier parts of the conversation took place (summary omitted in this replay)."
#: What the agent says when the recording has no reply for it (counted in ``fillers``).
FILLER_REPLY = "OK."
_CACHE_SIZE = 512


class ReplayRuntime:
    def __init__(self, counter: Runtime) -> None:
        self._counter = counter
        self._reply: str | None = None
        self._said: str | None = None  # the last recorded reply handed out (asked again: the same)
        self.live = False
        self.prompts: list[list[ChatMessage]] = []
        self.fillers = 0  # calls the recording had no answer for
        self.summaries = 0  # placeholder summaries handed out (one per eviction, or per part)
        self._counts: OrderedDict[object, int] = OrderedDict()

    # --- driving the replay ------------------------------------------------------------------
    def expect_reply(self, text: str | None) -> None:
        """The agent's next send_message says ``text`` (None: the agent stays silent)."""
        self._reply = text

    def forget_prompts(self) -> None:
        self.prompts.clear()

    # --- Runtime interface -------------------------------------------------------------------
    @property
    def info(self) -> RuntimeInfo:
        return self._counter.info

    def count_tokens(self, text: str) -> int:
        return self._cached(("text", text), lambda: self._counter.count_tokens(text))

    def count_prompt(self, messages: Sequence[ChatMessage]) -> int:
        key = ("prompt", tuple(messages))
        return self._cached(key, lambda: self._counter.count_prompt(list(messages)))

    def generate_call(
        self, request: CallRequest, *, on_event: StreamCallback | None = None, cancel: CancelToken | None = None
    ) -> ModelTurn:
        if request.avoid and not self.live and self._said is not None:
            # The agent asks again for a reply that repeated a recent message: a recording says
            # what it said (people do repeat each other), so the replayed conversation stays as it was.
            return ModelTurn(self._said)
        self.prompts.append(list(request.messages))
        if self.live:
            return self._counter.generate_call(request, on_event=on_event, cancel=cancel)
        names = {tool.name for tool in request.tools}
        self._said = None
        if self._reply is not None and "send_message" in names:
            text, self._reply = self._reply, None
            self._said = say(text)
            return ModelTurn(self._said)
        # A step the recording has no answer for: the memory-pressure alert, or an opener the
        # other speaker never answered. End the chain without adding content.
        self.fillers += 1
        if "pause_heartbeats" in names:
            return ModelTurn(call("pause_heartbeats", minutes=0))
        return ModelTurn(say(FILLER_REPLY))

    def generate_text(self, request: TextRequest, *, cancel: CancelToken | None = None) -> str:
        if self.live:
            return self._counter.generate_text(request, cancel=cancel)
        self.summaries += 1
        return PLACEHOLDER_SUMMARY

    def warm(self, messages: Sequence[ChatMessage], *, cancel: CancelToken | None = None) -> int:
        return self._counter.warm(messages, cancel=cancel) if self.live else 0

    def close(self) -> None:
        """The counting runtime belongs to the caller, who closes it."""

    # --- helpers -----------------------------------------------------------------------------
    def _cached(self, key: object, count) -> int:
        # The agent measures the same prefixes several times per step (budget sections,
        # eviction checks); counting once keeps a replay of thousands of turns quick.
        value = self._counts.get(key)
        if value is not None:
            self._counts.move_to_end(key)
            return value
        value = count()
        self._counts[key] = value
        if len(self._counts) > _CACHE_SIZE:
            self._counts.popitem(last=False)
        return value
