"""A deterministic runtime for tests of the agent's rules: it replays queued answers.

Each queued answer is either the raw text of a call (so tests can feed malformed JSON) or a
function of the prompt returning that text. Tokens are counted with a simple word-and-punctuation
tokenizer, which is exact for this runtime because it is the only tokenizer it has.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from memdesk.core.base.errors import GenerationCancelled, ModelError
from memdesk.core.runtime.base import (
    CallRequest,
    CancelToken,
    ChatMessage,
    GenerationStats,
    ModelTurn,
    RuntimeInfo,
    StreamCallback,
    TextRequest,
    ToolSpec,
)
from memdesk.core.runtime.streaming import CallStreamParser
from memdesk.core.text.words import words_and_marks

Answer = str | Callable[[Sequence[ChatMessage]], str]


def call(function: str, thoughts: str = "", heartbeat: bool | None = None, **arguments: Any) -> str:
    """Build the JSON text of a call, as a grammar-constrained model would produce it."""
    params: dict[str, Any] = {"inner_thoughts": thoughts, **arguments}
    if heartbeat is not None:
        params["request_heartbeat"] = heartbeat
    return json.dumps({"function": function, "params": params})


def say(message: str, thoughts: str = "") -> str:
    return call("send_message", thoughts, message=message)


class ScriptedRuntime:
    def __init__(
        self, answers: Iterable[Answer] = (), *, context_window: int = 4096, summaries: Iterable[str] = ()
    ) -> None:
        self._answers: deque[Answer] = deque(answers)
        self._summaries: deque[str] = deque(summaries)
        self._window = context_window
        self.prompts: list[list[ChatMessage]] = []  # every prompt seen, for assertions
        self.text_prompts: list[list[ChatMessage]] = []
        self.tools_seen: list[list[str]] = []
        self.warmed: list[list[ChatMessage]] = []  # every warm() prefix: there is nothing to prepare
        self.specs_seen: list[list[ToolSpec]] = []  # what each step's grammar would have admitted
        self.avoided: list[tuple[str, ...]] = []  # each step's texts not to copy (CallRequest.avoid)

    def enqueue(self, *answers: Answer) -> None:
        self._answers.extend(answers)

    def enqueue_summary(self, *summaries: str) -> None:
        self._summaries.extend(summaries)

    def clear(self) -> None:
        self._answers.clear()

    @property
    def pending(self) -> int:
        return len(self._answers)

    @property
    def info(self) -> RuntimeInfo:
        return RuntimeInfo(model_id="scripted", context_window=self._window, exact_tokens=True)

    def count_tokens(self, text: str) -> int:
        return len(words_and_marks(text))

    def render(self, messages: Sequence[ChatMessage]) -> str:
        parts = [f"<|{m.role}|>\n{m.content}\n" for m in messages]
        return "".join(parts) + "<|assistant|>\n"

    def count_prompt(self, messages: Sequence[ChatMessage]) -> int:
        return self.count_tokens(self.render(messages))

    def generate_call(
        self, request: CallRequest, *, on_event: StreamCallback | None = None, cancel: CancelToken | None = None
    ) -> ModelTurn:
        messages, tools = request.messages, request.tools
        prompt_tokens = self.count_prompt(messages)
        if prompt_tokens > self._window:
            raise ModelError(f"scripted runtime: prompt of {prompt_tokens} tokens exceeds the window of {self._window}")
        self.prompts.append(list(messages))
        self.tools_seen.append([t.name for t in tools])
        self.specs_seen.append(list(tools))
        self.avoided.append(tuple(request.avoid))
        if not self._answers:
            raise ModelError("scripted runtime: no answer queued")
        answer = self._answers.popleft()
        text = answer(messages) if callable(answer) else answer
        parser = CallStreamParser()
        for piece in _chunks(text, 4):
            if cancel is not None and cancel.cancelled:
                raise GenerationCancelled("Generation stopped")
            if on_event is not None:
                for event in parser.feed(piece):
                    on_event(event)
        generated = self.count_tokens(text)
        return ModelTurn(text, GenerationStats(prompt_tokens, prompt_tokens, generated, 0.0))

    def generate_text(self, request: TextRequest, *, cancel: CancelToken | None = None) -> str:
        messages = request.messages
        prompt_tokens = self.count_prompt(messages)
        if prompt_tokens > self._window:
            raise ModelError(f"scripted runtime: prompt of {prompt_tokens} tokens exceeds the window of {self._window}")
        self.text_prompts.append(list(messages))
        if self._summaries:
            return self._summaries.popleft()
        return "A scripted summary."

    def warm(self, messages: Sequence[ChatMessage], *, cancel: CancelToken | None = None) -> int:
        self.warmed.append(list(messages))
        return 0

    def close(self) -> None:
        pass


def _chunks(text: str, size: int) -> Iterable[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]
