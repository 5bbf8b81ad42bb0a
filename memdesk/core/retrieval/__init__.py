"""One retrieval layer for archival_memory_search and conversation_search: FTS5 BM25 and vector
candidates, fused and ranked. It reads the memory tables and returns ranked ids; the memory stores
(memdesk.core.memory) own the rows and every write to them."""

from memdesk.core.retrieval.messages import MessageRanker
from memdesk.core.retrieval.passages import PassageRanker
from memdesk.core.retrieval.vector_index import VectorIndex

__all__ = ["MessageRanker", "PassageRanker", "VectorIndex"]
