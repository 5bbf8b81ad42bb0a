"""A deterministic bag-of-words embedder (feature hashing). Fast and dependency-free: unit tests of
the memory logic use it; everything user-facing and every integration test uses the real model."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from memdesk.core.text.words import split_words


class HashingEmbedder:
    def __init__(self, dimension: int = 384, max_tokens: int = 254) -> None:
        """``max_tokens`` mimics a model's window (MiniLM's by default); its tokens are words."""
        self._dimension = dimension
        self._max_tokens = max_tokens

    @property
    def model_id(self) -> str:
        return f"hashing-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def count_tokens(self, text: str) -> int:
        return len(split_words(text))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in split_words(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                index = int.from_bytes(digest[:4], "little") % self._dimension
                sign = 1.0 if digest[4] & 1 else -1.0
                out[row, index] += sign
            norm = np.linalg.norm(out[row])
            if norm > 0:
                out[row] /= norm
        return out
