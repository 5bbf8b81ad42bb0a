"""A model behind an OpenAI-compatible HTTP server (llama.cpp's server, LM Studio, vLLM, OpenAI...).

Calls are requested with a JSON-schema response format built from the tool specs, then checked
and normalised here: servers differ in how strictly they honour a schema, so we never trust the
shape. A known function with object params comes back in our exact JSON shape (inner thoughts
first, arguments in schema order, request_heartbeat last); anything else is returned as the raw
text, and the agent reports it to the model as a failed call.

Token counts are exact for GPT-family models whose tiktoken encoding is available offline
(``gpt_tokens``: GPT-4 and GPT-3.5-turbo); for any other model the server's tokenizer is unknown,
and the estimate (``estimate_tokens``, ``exact_tokens=False``) errs high so that context budgeting
stays on the safe side.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from memdesk.core.base.errors import GenerationCancelled, ModelError
from memdesk.core.base.settings_table import SETTINGS, Settings
from memdesk.core.net.loopback import opener_for
from memdesk.core.runtime import gpt_tokens
from memdesk.core.runtime.base import (
    DRY,
    CallRequest,
    CancelToken,
    ChatMessage,
    GenerationStats,
    ModelTurn,
    RuntimeInfo,
    SamplingParams,
    StreamCallback,
    TextRequest,
    ToolSpec,
)
from memdesk.core.runtime.grammar import HEARTBEAT, THOUGHTS
from memdesk.core.runtime.streaming import CallStreamParser
from memdesk.core.text.words import words_and_marks

_MESSAGE_OVERHEAD = 4  # role markers and separators per message in common chat templates


def estimate_tokens(text: str) -> int:
    """BPE tokenizers average about 4 bytes of English per token and rarely fewer than one token
    per word or punctuation mark; taking the larger of the two keeps the estimate high."""
    if not text:
        return 0
    return max(len(words_and_marks(text)), math.ceil(len(text.encode("utf-8")) / 4))


#: How a JSON schema goes to the server (see OpenAISettings.schema_style).
SchemaStyle = Literal["json_schema", "json_object", "none"]


@dataclass(frozen=True)
class OpenAISettings:
    """How to reach the server: those that are settings (memdesk/core/base/settings_table.py) have
    no default here, ``from_settings`` takes them from a ``Settings``."""

    base_url: str  # e.g. http://127.0.0.1:8080/v1
    model: str
    context_window: int
    # "json_schema": OpenAI's response_format. "json_object": {"type": "json_object", "schema": ...},
    # what llama-cpp-python's server understands. "none": the server ignores or refuses schemas
    # (found out by models/servers.py), so none is sent and every call is only checked afterwards.
    schema_style: SchemaStyle
    api_key: str | None = None
    timeout: float = 300.0

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAISettings:
        """The server ``settings`` name (no model name: the server's default one)."""
        styles = SETTINGS["openai_schema"].choices
        style = settings.openai_schema
        if style not in styles:
            raise ModelError(f"Unknown JSON schema style {style!r}; use {', '.join(styles[:-1])} or {styles[-1]}")
        return cls(
            settings.openai_base_url,
            model=settings.openai_model or "default",
            context_window=settings.context_size,
            schema_style=cast(SchemaStyle, style),  # one of the choices: checked above
        )


def call_schema(
    tools: Sequence[ToolSpec], heartbeat_tools: frozenset[str], thoughts_chars: int | None = None
) -> dict[str, Any]:
    """A JSON schema admitting one call of one of ``tools`` in our shape (``thoughts_chars``:
    inner_thoughts' maxLength, for servers that keep it)."""
    thoughts: dict[str, Any] = (
        {"type": "string"} if thoughts_chars is None else {"type": "string", "maxLength": thoughts_chars}
    )
    options = []
    for tool in tools:
        properties: dict[str, Any] = {THOUGHTS: dict(thoughts)}
        required = [THOUGHTS]
        for name, schema in tool.parameters.get("properties", {}).items():
            if name in (THOUGHTS, HEARTBEAT):
                continue
            properties[name] = {k: v for k, v in schema.items() if k != "description"}
            if name in tool.parameters.get("required", []):
                required.append(name)
        if tool.name in heartbeat_tools:
            properties[HEARTBEAT] = {"type": "boolean"}
            required.append(HEARTBEAT)
        params = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
        options.append(
            {
                "type": "object",
                "properties": {"function": {"type": "string", "enum": [tool.name]}, "params": params},
                "required": ["function", "params"],
                "additionalProperties": False,
            }
        )
    return options[0] if len(options) == 1 else {"anyOf": options}


def normalise_call(text: str, tools: Sequence[ToolSpec], heartbeat_tools: frozenset[str]) -> str:
    """Our exact JSON shape for a recognisable call; the raw text otherwise."""
    try:
        call = json.loads(text)
    except ValueError:
        return text
    names = {tool.name: tool for tool in tools}
    if not isinstance(call, dict) or call.get("function") not in names or not isinstance(call.get("params"), dict):
        return text
    tool, params = names[call["function"]], call["params"]
    ordered: dict[str, Any] = {THOUGHTS: params.get(THOUGHTS, "")}
    for name in tool.parameters.get("properties", {}):
        if name not in (THOUGHTS, HEARTBEAT) and name in params:
            ordered[name] = params[name]
    ordered.update({k: v for k, v in params.items() if k not in ordered and k != HEARTBEAT})  # the agent rejects these
    if HEARTBEAT in params or tool.name in heartbeat_tools:
        ordered[HEARTBEAT] = params.get(HEARTBEAT, False)
    return json.dumps({"function": tool.name, "params": ordered}, ensure_ascii=False)


class OpenAIHttpRuntime:
    def __init__(self, settings: OpenAISettings) -> None:
        self.settings = settings
        self._encoding = gpt_tokens.encoding_for(settings.model)
        # A server on this machine is reached directly: a proxy from the environment would receive
        # every prompt, core memory included.
        self._opener = opener_for(settings.base_url)
        self._info = RuntimeInfo(
            model_id=settings.model, context_window=settings.context_window, exact_tokens=self._encoding is not None
        )

    @property
    def info(self) -> RuntimeInfo:
        return self._info

    def count_tokens(self, text: str) -> int:
        if self._encoding is not None:
            return gpt_tokens.count_text(self._encoding, text)
        return estimate_tokens(text)

    def count_prompt(self, messages: Sequence[ChatMessage]) -> int:
        if self._encoding is not None:
            return gpt_tokens.count_chat(self._encoding, messages)
        return sum(estimate_tokens(m.content) + _MESSAGE_OVERHEAD for m in messages) + 3

    def generate_call(
        self, request: CallRequest, *, on_event: StreamCallback | None = None, cancel: CancelToken | None = None
    ) -> ModelTurn:
        messages, tools, heartbeat_tools = request.messages, request.tools, request.heartbeat_tools
        schema = call_schema(tools, heartbeat_tools, request.thoughts_chars)
        response_format: dict[str, Any] | None
        if self.settings.schema_style == "json_schema":
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": "function_call", "schema": schema, "strict": True},
            }
        elif self.settings.schema_style == "json_object":
            response_format = {"type": "json_object", "schema": schema}
        else:
            response_format = None
        parser = CallStreamParser()
        pieces: list[str] = []
        generated = 0
        for delta in self._stream(messages, request.params, response_format, cancel, avoid=bool(request.avoid)):
            pieces.append(delta)
            generated += 1
            if on_event is not None:
                for event in parser.feed(delta):
                    on_event(event)
        text = normalise_call("".join(pieces).strip(), tools, heartbeat_tools)
        prompt_tokens = self.count_prompt(messages)
        return ModelTurn(text, GenerationStats(prompt_tokens, prompt_tokens, generated, 0.0))

    def generate_text(self, request: TextRequest, *, cancel: CancelToken | None = None) -> str:
        return "".join(self._stream(request.messages, request.params, None, cancel)).strip()

    def warm(self, messages: Sequence[ChatMessage], *, cancel: CancelToken | None = None) -> int:
        return 0  # the server keeps its own cache; a request just to warm it would cost a generation

    def close(self) -> None:
        pass

    # --- HTTP ---------------------------------------------------------------------------------------
    def _request_body(
        self,
        messages: Sequence[ChatMessage],
        params: SamplingParams,
        response_format: dict[str, Any] | None,
        *,
        avoid: bool = False,
    ) -> bytes:
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_tokens,
            "stream": True,
            # Not in OpenAI's API, but llama.cpp-based servers read them and others ignore them.
            "top_k": params.top_k,
            "min_p": params.min_p,
            "repeat_penalty": params.repeat_penalty,
        }
        if avoid:
            # Generated again after copying what the prompt holds: llama.cpp's server runs DRY over
            # the prompt's tokens too (it accepts them into its samplers), so a copied run costs;
            # other servers have only the frequency penalty of OpenAI's API, over what they generate.
            body.update(
                dry_multiplier=DRY.multiplier,
                dry_base=DRY.base,
                dry_allowed_length=DRY.allowed,
                dry_penalty_last_n=-1,
                dry_sequence_breakers=list(DRY.breakers),
                frequency_penalty=0.5,
            )
        if params.seed is not None:
            body["seed"] = params.seed
        if response_format is not None:
            body["response_format"] = response_format
        return json.dumps(body).encode("utf-8")

    def _stream(
        self,
        messages: Sequence[ChatMessage],
        params: SamplingParams,
        response_format: dict[str, Any] | None,
        cancel: CancelToken | None,
        *,
        avoid: bool = False,
    ) -> Iterator[str]:
        url = self.settings.base_url.rstrip("/") + "/chat/completions"
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        request = urllib.request.Request(
            url, data=self._request_body(messages, params, response_format, avoid=avoid), headers=headers, method="POST"
        )
        if cancel is not None and cancel.cancelled:
            raise GenerationCancelled("Generation stopped")
        try:
            response = self._opener.open(request, timeout=self.settings.timeout)
        except urllib.error.HTTPError as error:
            detail = error.read()[:300].decode("utf-8", errors="replace")
            raise ModelError(f"The model server at {url} answered {error.code}: {detail}") from error
        except (urllib.error.URLError, OSError) as error:
            raise ModelError(
                f"Cannot reach the model server at {url}: {error}", hint="Is the server running?"
            ) from error
        with response:
            if "html" in (response.headers.get("Content-Type") or "").lower():
                raise ModelError(
                    f"The model server at {url} answered with a web page (HTML), not the OpenAI-compatible API"
                )
            try:
                for raw in response:
                    if cancel is not None and cancel.cancelled:
                        raise GenerationCancelled("Generation stopped")
                    line = raw.decode("utf-8", errors="replace").strip()
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    delta = _delta_text(data, url)
                    if delta:
                        yield delta
            except (OSError, urllib.error.URLError) as error:
                raise ModelError(f"The connection to the model server at {url} broke: {error}") from error


def _delta_text(data: str, url: str) -> str:
    try:
        chunk = json.loads(data)
    except ValueError as error:
        raise ModelError(f"The model server at {url} sent something that is not JSON: {data[:200]}") from error
    if "error" in chunk:
        raise ModelError(f"The model server at {url} reported an error: {chunk['error']}")
    choices = chunk.get("choices") or [{}]
    return (choices[0].get("delta") or {}).get("content") or ""
