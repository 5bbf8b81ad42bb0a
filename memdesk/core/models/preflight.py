"""The checks a model file must pass, in this process and in milliseconds, before MemDesk tries to
load it in place of the working model.

* the GGUF header is whole and every tensor fits in the file (``gguf.read_gguf``);
* the chat template (the user's override, else the model's own) can carry a system message:
  MemDesk puts its instructions and the whole core memory there, so a template that drops it or
  refuses it (some do, with ``raise_exception``) would give the model amnesia.

Whether llama.cpp knows the file's architecture is only known by loading it, which the front ends
do in the model's child process before they switch (see ``library``).
"""

from __future__ import annotations

from pathlib import Path

from memdesk.core.base.errors import ModelError, ModelFileError
from memdesk.core.runtime.base import ChatMessage
from memdesk.core.runtime.chat_template import ChatTemplate
from memdesk.core.runtime.gguf import GgufInfo, read_gguf

_PROBE = "MEMDESK-SYSTEM-PROBE-41c7"


def check_model_file(path: str | Path, *, chat_template_override: str | None = None) -> GgufInfo:
    """Raise ModelFileError naming ``path`` when MemDesk could not work with it; else its header."""
    path = Path(path)
    info = read_gguf(path)
    try:
        template = ChatTemplate.choose(chat_template_override, info.chat_template, model_name=path.name)
        rendered = template.render(
            [ChatMessage("system", _PROBE), ChatMessage("user", "Hello")], add_generation_prompt=True
        )
    except ModelError as error:
        raise ModelFileError(
            f"Model file {path} cannot be used: {error.message}",
            hint=error.hint or "Set a chat template override in the settings, or pick another model.",
        ) from error
    if _PROBE not in rendered:
        raise ModelFileError(
            f"The chat template of {path} drops the system message, where MemDesk keeps the model's memory",
            hint="Set a chat template override in the settings, or pick another model.",
        )
    return info


def explain_load_failure(error: ModelError, path: str | Path) -> ModelError:
    """A load failure of a file that passed ``check_model_file``, said with what the header tells:
    most often llama.cpp does not know the model's architecture."""
    if not isinstance(error, ModelFileError):
        return error
    try:
        architecture = read_gguf(path).architecture or "unknown"
    except ModelFileError:
        return error
    return ModelFileError(
        f"{error.message} (its architecture is {architecture!r}, which this llama.cpp build may not support)",
        hint="The previous model stays active. Pick another model, or update MemDesk.",
    )
