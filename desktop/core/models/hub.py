"""Where model downloads come from, following the Hugging Face conventions ``HF_ENDPOINT`` (another
hub or a mirror) and ``HF_HUB_OFFLINE`` (no downloads at all).

The environment is read when this module is first imported, which the composition root does at
start-up: later, the embedding model sets ``HF_HUB_OFFLINE=1`` in this process for its own loading
(see core/embedding/sentence_transformer.py), and that must not be mistaken for the user's wish.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

ENDPOINT_ENV = "HF_ENDPOINT"
OFFLINE_ENV = "HF_HUB_OFFLINE"
DEFAULT_ENDPOINT = "https://huggingface.co"

_AT_START: dict[str, str] = {k: v for k in (ENDPOINT_ENV, OFFLINE_ENV) if (v := os.environ.get(k)) is not None}


def _is_true(value: str | None) -> bool:
    return (value or "").strip().upper() in ("1", "ON", "YES", "TRUE")


@dataclass(frozen=True)
class HubConfig:
    endpoint: str = DEFAULT_ENDPOINT
    offline: bool = False

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> "HubConfig":
        """From ``environ``, or from the environment MemDesk started with."""
        env = _AT_START if environ is None else environ
        endpoint = (env.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT).rstrip("/")
        return cls(endpoint=endpoint, offline=_is_true(env.get(OFFLINE_ENV)))

    def file_url(self, repo: str, revision: str, file: str) -> str:
        return f"{self.endpoint}/{repo}/resolve/{revision}/{file}"
