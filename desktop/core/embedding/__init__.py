"""Text embedders behind one interface, so the store and the tests can choose."""

from desktop.core.embedding.base import Embedder, query_vector

__all__ = ["Embedder", "query_vector"]
