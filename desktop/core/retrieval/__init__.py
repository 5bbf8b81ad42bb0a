"""One retrieval layer for archival_memory_search and conversation_search: FTS5 BM25 and vector
candidates, fused, re-scored and paged."""

from desktop.core.retrieval.messages import RankedMessage, RankedMessagePage, index_pending_messages, rank_messages, search_messages
from desktop.core.retrieval.passages import rank_passages, search_passages, vector_candidates
from desktop.core.retrieval.space import ensure_space, reembed_store

__all__ = [
    "RankedMessage",
    "RankedMessagePage",
    "ensure_space",
    "index_pending_messages",
    "rank_messages",
    "rank_passages",
    "reembed_store",
    "search_messages",
    "search_passages",
    "vector_candidates",
]
