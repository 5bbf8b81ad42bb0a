from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors. ``model_id`` and ``dimension`` are recorded
    in the store so vectors from different models are never mixed. Safe to call from any thread:
    the GUI, the job pool, the agent worker and the ingestion thread share one embedder."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_tokens(self) -> int:
        """How many tokens of one text the model reads (special tokens excluded); it ignores the rest."""

    def count_tokens(self, text: str) -> int:
        """The tokens of ``text`` as this model's tokenizer counts them (special tokens excluded)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), dimension), float32, L2-normalised."""
