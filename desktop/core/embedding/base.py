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
        """Shape (len(texts), dimension), float32, L2-normalised: the vectors stored for messages,
        passages and names."""


def query_vector(embedder: Embedder, text: str) -> np.ndarray:
    """The vector a search compares stored vectors with. Models trained with two roles (E5's
    "query: " and "passage: ") embed a search apart, through their ``embed_query``; for the
    others, and the small test embedders, a query is embedded like any text."""
    embed_query = getattr(embedder, "embed_query", None)
    if embed_query is not None:
        return embed_query(text)
    return embedder.embed([text])[0]
