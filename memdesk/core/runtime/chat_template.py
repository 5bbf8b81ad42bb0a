"""Render a prompt with the model's own chat template, in a sandbox.

The template is Jinja source taken from the user's per-model override, else from the GGUF metadata
(``tokenizer.chat_template``). There is no third choice: a model without a template is refused,
because a guessed prompt format makes small models babble. Templates come from downloaded files,
so they run in Jinja's immutable sandbox, which cannot reach Python internals.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from memdesk.core.base.errors import ModelError
from memdesk.core.runtime.base import ChatMessage


class ChatTemplate:
    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = "", origin: str = "model") -> None:
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.origin = origin  # "override" or "model": said in error messages
        environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, loader=jinja2.BaseLoader())
        environment.globals["raise_exception"] = _raise_exception
        environment.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        try:
            self._template = environment.from_string(source)
        except jinja2.TemplateError as error:
            raise ModelError(f"The {origin} chat template does not parse: {error}") from error

    @classmethod
    def choose(
        cls, override: str | None, from_model: str | None, *, model_name: str, bos_token: str = "", eos_token: str = ""
    ) -> ChatTemplate:
        """The override when given, else the model's template; raise ModelError when neither exists."""
        if override and override.strip():
            return cls(override, bos_token=bos_token, eos_token=eos_token, origin="override")
        if from_model and from_model.strip():
            return cls(from_model, bos_token=bos_token, eos_token=eos_token, origin="model")
        raise ModelError(
            f"Model {model_name} has no chat template",
            hint="Set a chat template override for this model in the settings.",
        )

    def render(self, messages: Sequence[ChatMessage], *, add_generation_prompt: bool = True) -> str:
        try:
            return self._template.render(
                messages=[{"role": m.role, "content": m.content} for m in messages],
                add_generation_prompt=add_generation_prompt,
                bos_token=self.bos_token,
                eos_token=self.eos_token,
            )
        except jinja2.TemplateError as error:  # includes SecurityError from the sandbox
            raise ModelError(f"The {self.origin} chat template failed to render: {error}") from error


def _raise_exception(message: str) -> None:
    raise jinja2.TemplateError(message)
