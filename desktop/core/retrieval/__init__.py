"""One retrieval layer for archival_memory_search and conversation_search: FTS5 BM25 and vector
candidates, fused and ranked. It reads the memory tables and returns ranked ids; the memory stores
(desktop.core.memory) own the rows and every write to them."""

from desktop.core.retrieval.messages import MessageRanker
from desktop.core.retrieval.passages import PassageRanker
from desktop.core.retrieval.vector_index import VectorIndex
from desktop.core.retrieval import vector_codes

__all__ = ["MessageRanker", "PassageRanker", "VectorIndex"]
