"""Settings of the llama.cpp runtime, in a module that does not import llama_cpp: the app builds
them in the parent process, while only the model's child process loads the native library."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from memdesk.core.base.settings_table import DEFAULTS


@dataclass(frozen=True)
class LlamaSettings:
    model_path: Path | str
    context_size: int = DEFAULTS.context_size  # capped at the model's training context
    threads: int = DEFAULTS.threads  # 0: default_threads()
    gpu_layers: int = DEFAULTS.gpu_layers
    chat_template_override: str | None = None
    batch_size: int = 256  # prompt tokens per decode; also how often a long prompt polls cancel
    # Where the KV state of the prompt's system message is kept between runs (see kv_store.py);
    # None: nothing is written, every start evaluates the whole prompt.
    cache_dir: Path | str | None = None
    cache_max_entries: int = 8
    cache_max_bytes: int = 1 << 30
    # The passphrase of an encrypted store: its states are then kept encrypted with it
    # (encrypted_kv_store.py). Never printed: kept out of the repr.
    cache_passphrase: str | None = field(default=None, repr=False)
