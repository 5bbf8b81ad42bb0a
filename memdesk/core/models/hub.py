"""Where model downloads come from, following the Hugging Face conventions ``HF_ENDPOINT`` (another
hub or a mirror) and ``HF_HUB_OFFLINE`` (no downloads at all).

The user's Hugging Face token (``HF_TOKEN`` or ``huggingface-cli login``) was issued by
huggingface.co and is sent there only: never to an ``HF_ENDPOINT`` mirror, and never along a
redirect to another scheme, host or port (the hub sends file bytes from a CDN host).

The environment is read when this module is first imported, which the composition root does at
start-up: a library that later sets ``HF_HUB_OFFLINE=1`` in this process for its own loading must
not be mistaken for the user's wish.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

ENDPOINT_ENV = "HF_ENDPOINT"
OFFLINE_ENV = "HF_HUB_OFFLINE"
DEFAULT_ENDPOINT = "https://huggingface.co"

_AT_START: dict[str, str] = {k: v for k in (ENDPOINT_ENV, OFFLINE_ENV) if (v := os.environ.get(k)) is not None}


def _is_true(value: str | None) -> bool:
    return (value or "").strip().upper() in ("1", "ON", "YES", "TRUE")


def origin(url: str) -> tuple[str, str, int]:
    """Scheme, host and port: what must stay the same for a credential to go along."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


@dataclass(frozen=True)
class HubConfig:
    endpoint: str = DEFAULT_ENDPOINT
    offline: bool = False
    #: The one origin the user's token goes to (tests name a loopback hub of their own).
    token_origin: str = DEFAULT_ENDPOINT

    def sends_token_to(self, url: str) -> bool:
        return origin(url) == origin(self.token_origin)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> HubConfig:
        """From ``environ``, or from the environment MemDesk started with."""
        env = _AT_START if environ is None else environ
        endpoint = (env.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT).rstrip("/")
        return cls(endpoint=endpoint, offline=_is_true(env.get(OFFLINE_ENV)))

    def file_url(self, repo: str, revision: str, file: str) -> str:
        return f"{self.endpoint}/{repo}/resolve/{revision}/{file}"
