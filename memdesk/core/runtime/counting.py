"""A runtime that only counts: the prompt's budget measured without a model loaded (another
app asking what automatic recall would place for a message, while no model runs here).

Counts are estimates (openai_http.estimate_tokens: kept high), and say so (``exact_tokens``);
asked to generate, it refuses."""

from __future__ import annotations

from collections.abc import Sequence

from memdesk.core.base.errors import ModelError
from memdesk.core.runtime.base import CallRequest, ChatMessage, ModelTurn, RuntimeInfo, TextRequest
from memdesk.core.runtime.openai_http import estimate_tokens

#: Role markers and separators per message in common chat templates.
MESSAGE_OVERHEAD = 4


class CountingRuntime:
    def __init__(self, context_window: int, model_id: str = "estimate") -> None:
        self._info = RuntimeInfo(model_id=model_id, context_window=context_window, exact_tokens=False)

    @property
    def info(self) -> RuntimeInfo:
        return self._info

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    def count_prompt(self, messages: Sequence[ChatMessage]) -> int:
        return sum(estimate_tokens(m.content) + MESSAGE_OVERHEAD for m in messages) + 3

    def generate_call(self, request: CallRequest, *, on_event=None, cancel=None) -> ModelTurn:
        raise ModelError("This runtime only counts tokens; it has no model to generate with")

    def generate_text(self, request: TextRequest, *, cancel=None) -> str:
        raise ModelError("This runtime only counts tokens; it has no model to generate with")

    def warm(self, messages: Sequence[ChatMessage], *, cancel=None) -> int:
        return 0

    def close(self) -> None:
        pass
