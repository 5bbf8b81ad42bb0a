"""Settings of the llama.cpp runtime, in a module that does not import llama_cpp: the app builds
them in the parent process, while only the model's child process loads the native library."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from memdesk.core.base.settings_table import Settings


@dataclass(frozen=True)
class LlamaSettings:
    """The settings of one model load: those that are settings (memdesk/core/base/settings_table.py)
    have no default here, ``from_settings`` takes them from a ``Settings``."""

    model_path: Path | str
    context_size: int  # capped at the model's training context
    threads: int  # 0: default_threads()
    gpu_layers: int
    chat_template_override: str | None
    batch_size: int = 256  # prompt tokens per decode; also how often a long prompt polls cancel
    # Where the KV state of the prompt's system message is kept between runs (see kv_store.py);
    # None: nothing is written, every start evaluates the whole prompt.
    cache_dir: Path | str | None = None
    cache_max_entries: int = 8
    cache_max_bytes: int = 1 << 30
    # An encrypted store's states are kept encrypted (encrypted_kv_store.py) under this key, derived
    # from the store's (storage/driver.py: kv_cache_key): the model's process never holds the
    # passphrase. Never printed: kept out of the repr.
    cache_key: bytes | None = field(default=None, repr=False)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        model_path: Path | str,
        *,
        batch_size: int = 256,
        cache_dir: Path | str | None = None,
        cache_key: bytes | None = None,
    ) -> LlamaSettings:
        """The load ``settings`` ask for, of the model at ``model_path`` (the caller resolves the
        setting's empty value to the bundled model)."""
        return cls(
            model_path,
            context_size=settings.context_size,
            threads=settings.threads,
            gpu_layers=settings.gpu_layers,
            chat_template_override=settings.chat_template or None,
            batch_size=batch_size,
            cache_dir=cache_dir,
            cache_key=cache_key,
        )
