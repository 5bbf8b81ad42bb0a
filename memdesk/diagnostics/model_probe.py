"""What the doctor's child process does with the model: report the build, load, decode 16 tokens.

Runs only in the child (``child.run_in_child``); each stage is yielded as it completes, so if
llama.cpp crashes the parent knows whether it died loading or decoding.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import sampling

PROMPT = "Count from one to twenty in words."


def decode(model_path: str, tokens: int) -> Iterator[tuple[str, dict[str, Any]]]:
    from memdesk.core.runtime.base import ChatMessage
    from memdesk.core.runtime.llamacpp.native import build_info
    from memdesk.core.runtime.llamacpp.runtime import LlamaCppRuntime
    from memdesk.core.runtime.llamacpp.settings import LlamaSettings

    yield ("build", build_info())
    started = time.perf_counter()
    runtime = LlamaCppRuntime(LlamaSettings.from_settings(Settings(context_size=512), model_path, batch_size=64))
    yield ("loaded", {"seconds": time.perf_counter() - started, "context": runtime.info.context_window})
    try:
        turn = runtime.complete(
            [ChatMessage("user", PROMPT)], sampling(Settings(temperature=0.0, seed=0, max_answer_tokens=tokens))
        )
    finally:
        runtime.close()
    yield ("decoded", {"tokens": turn.stats.generated_tokens, "seconds": turn.stats.seconds, "text": turn.text})
