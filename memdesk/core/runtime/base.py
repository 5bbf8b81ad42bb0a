"""The runtime interface: the agent's only view of a model.

A prompt is a list of ``ChatMessage``. The model answers every step with exactly one JSON object,
``{"function": NAME, "params": {"inner_thoughts": ..., ...arguments}}``; runtimes that can, enforce
that shape with a grammar built from the tool specs. The agent parses and validates the object
itself, so a runtime that cannot constrain output still works (bad output becomes a failed call the
model is told about).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from memdesk.core.base.settings_table import Settings

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: str


@dataclass(frozen=True)
class SamplingParams:
    """Every sampling knob in one frozen object (no long keyword lists). Each is a setting
    (memdesk/core/base/settings_table.py), so it has no default here: ``sampling`` makes one from a
    ``Settings``."""

    temperature: float
    top_k: int
    top_p: float
    min_p: float
    repeat_penalty: float
    seed: int | None  # None: random (the seed setting's -1)
    max_tokens: int


def sampling(settings: Settings) -> SamplingParams:
    """The sampling settings as the runtime takes them: the one place they are turned into
    ``SamplingParams``."""
    return SamplingParams(
        temperature=settings.temperature,
        top_k=settings.top_k,
        top_p=settings.top_p,
        min_p=settings.min_p,
        repeat_penalty=settings.repeat_penalty,
        seed=None if settings.seed < 0 else settings.seed,
        max_tokens=settings.max_answer_tokens,
    )


@dataclass(frozen=True)
class ToolSpec:
    """One callable function as the model sees it: a name and a JSON schema of its parameters."""

    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema: {"type": "object", "properties": ..., "required": [...]}


StreamKind = Literal["thought", "message"]


@dataclass(frozen=True)
class StreamEvent:
    """A piece of the model's answer while it is being generated.

    ``kind`` is "thought" for the inner monologue (private) and "message" for the text of a
    ``send_message`` call (what the user will see)."""

    kind: StreamKind
    text: str


StreamCallback = Callable[[StreamEvent], None]


class CancelToken:
    """Set from any thread to stop generation; runtimes poll it between tokens."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    def reset(self) -> None:
        self._event.clear()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


@dataclass(frozen=True)
class GenerationStats:
    prompt_tokens: int = 0  # tokens in the prompt
    evaluated_tokens: int = 0  # prompt tokens actually evaluated (the rest came from the KV cache)
    generated_tokens: int = 0
    seconds: float = 0.0
    evaluation_seconds: float = 0.0  # the part of ``seconds`` spent evaluating the prompt (0: not measured)

    def then(self, later: GenerationStats) -> GenerationStats:
        """This generation and a ``later`` one of the same prompt, as one step's cost."""
        return GenerationStats(
            later.prompt_tokens,
            self.evaluated_tokens + later.evaluated_tokens,
            self.generated_tokens + later.generated_tokens,
            self.seconds + later.seconds,
            self.evaluation_seconds + later.evaluation_seconds,
        )


@dataclass(frozen=True)
class ModelTurn:
    """What the model produced for one step: the raw JSON text of its call."""

    text: str
    stats: GenerationStats = field(default_factory=GenerationStats)


@dataclass(frozen=True)
class RuntimeInfo:
    model_id: str
    context_window: int
    exact_tokens: bool  # True when counts come from the model's own tokenizer


def _freeze(request: object, name: str) -> None:
    """Callers pass lists; a request keeps tuples, so it cannot change after it was made."""
    object.__setattr__(request, name, tuple(getattr(request, name)))


@dataclass(frozen=True)
class Dry:
    """DRY ("don't repeat yourself", p-e-w's sampler, in llama.cpp) as a request with ``avoid``
    uses it: extending a run of more than ``allowed`` tokens that the avoided texts (or the answer
    so far) already hold costs ``multiplier * base ** (run - allowed)`` logits, so a short shared
    phrase stays free and a copied sentence becomes very unlikely after a few tokens. ``breakers``
    end a run (line breaks, colons, quotes, emphasis), as llama.cpp's defaults do."""

    multiplier: float = 0.8
    base: float = 1.75
    allowed: int = 2
    breakers: tuple[str, ...] = ("\n", ":", '"', "*")


DRY = Dry()


@dataclass(frozen=True)
class CallRequest:
    """What the model is asked for in one agent step: the next function call after ``messages``.

    ``tools`` are the functions it may call (the grammar admits no other); ``heartbeat_tools``
    names those whose arguments must include ``request_heartbeat``. ``persist`` False: the runtime
    keeps nothing of this prompt on disk (a private chat); states already there may still be read.
    ``thoughts_chars`` bounds ``inner_thoughts`` where the runtime enforces a grammar (None: its
    default), so a call that must fit in few tokens cannot be cut off mid-JSON by rambling."""

    messages: Sequence[ChatMessage]
    tools: Sequence[ToolSpec]
    params: SamplingParams
    heartbeat_tools: frozenset[str] = frozenset()
    persist: bool = True
    thoughts_chars: int | None = None
    #: Texts the answer must not copy (a reply that repeated one is generated again): the runtime
    #: penalises repeating a run of their tokens (``Dry``), however the model was trained.
    avoid: Sequence[str] = ()

    def __post_init__(self) -> None:
        _freeze(self, "messages")
        _freeze(self, "tools")
        _freeze(self, "avoid")
        object.__setattr__(self, "heartbeat_tools", frozenset(self.heartbeat_tools))


@dataclass(frozen=True)
class TextRequest:
    """Free text after ``messages`` (summaries, ``message_chatgpt``); ``persist`` as in ``CallRequest``."""

    messages: Sequence[ChatMessage]
    params: SamplingParams
    persist: bool = True

    def __post_init__(self) -> None:
        _freeze(self, "messages")


@runtime_checkable
class Runtime(Protocol):
    """A model behind the agent. Implementations: scripted (tests), llama.cpp, OpenAI-compatible HTTP."""

    @property
    def info(self) -> RuntimeInfo: ...

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` alone (no template), with the model's tokenizer when it has one."""

    def count_prompt(self, messages: Sequence[ChatMessage]) -> int:
        """Tokens of the whole rendered prompt, template and generation prompt included."""

    def generate_call(
        self, request: CallRequest, *, on_event: StreamCallback | None = None, cancel: CancelToken | None = None
    ) -> ModelTurn:
        """Generate one function call. Raises GenerationCancelled when ``cancel`` fires."""

    def generate_text(self, request: TextRequest, *, cancel: CancelToken | None = None) -> str:
        """Free text (summaries, ``message_chatgpt``)."""

    def warm(self, messages: Sequence[ChatMessage], *, cancel: CancelToken | None = None) -> int:
        """Evaluate ``messages``, the beginning every coming prompt shares, ahead of time and keep
        their state (in memory, and on disk across restarts) so the first reply does not pay for
        them. Returns the tokens evaluated: 0 when they were ready already or the runtime has
        nothing to prepare. Raises GenerationCancelled when ``cancel`` fires (between batches)."""

    def close(self) -> None: ...
