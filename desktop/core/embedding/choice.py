"""The embedding models MemDesk can use, by the name a person or a command line gives."""

from __future__ import annotations

from desktop.core.embedding.base import Embedder

MINILM = "all-MiniLM-L6-v2"
E5_SMALL = "multilingual-e5-small"
NAMES = (MINILM, E5_SMALL)


def make_embedder(name: str = MINILM) -> Embedder:
    """A new embedder of that model; it loads on first use."""
    if name == MINILM:
        from desktop.core.embedding.sentence_transformer import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder()
    if name == E5_SMALL:
        from desktop.core.embedding.e5_small import E5SmallEmbedder

        return E5SmallEmbedder()
    raise ValueError(f"unknown embedding model {name!r}: one of {', '.join(NAMES)}")
