"""Text embedders behind one interface, so the store and the tests can choose."""

from memdesk.core.embedding.base import Embedder

__all__ = ["Embedder"]
