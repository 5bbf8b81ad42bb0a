"""archival_memory_search ranking: vector candidates (in-memory int8/float index) fused with FTS5 BM25.

Retrieval only ranks: it returns passage ids with scores, and archival memory
(memdesk.core.memory.archival) turns them into passages with citations. Passages whose vectors are
still being computed are found through FTS alone, so a document is searchable the moment its chunks
are stored. The top ``SEARCH_DEPTH`` is computed once per query and paged through, as MemGPT did.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from memdesk.core.embedding import Embedder
from memdesk.core.retrieval.bounded_fts import FtsIndex, best_matches
from memdesk.core.retrieval.changes import row_changes
from memdesk.core.retrieval.query import fts_phrases, meaning_text
from memdesk.core.retrieval.vector_index import VectorIndex
from memdesk.core.storage import Database

SEARCH_DEPTH = 100
#: Documents are prose written to be read, where dense similarity is the stronger signal; BM25 adds
#: exact names, numbers and rare words that MiniLM blurs.
LEXICAL_WEIGHT = 0.35
#: Rankings kept per ranker (a query is ranked once and paged through).
CACHED_RANKINGS = 64

#: The index first, then each hit's row (CROSS JOIN fixes the order: see messages.LEXICAL_INDEX).
LEXICAL_INDEX = FtsIndex("passages_fts", "p.agent_id", "CROSS JOIN passages p ON p.id = f.rowid")


@dataclass(frozen=True)
class PassageRank:
    id: int
    score: float  # higher is better


class PassageRanker:
    """Ranks one store's passages, with that store's cache of recent rankings: built once per store
    by the composition root and passed in. ``speakers``: who speaks in the agent's conversation;
    the dense leg embeds the query as the conversation's search does (query.meaning_text), so a
    search of both memories embeds it once."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder | None,
        vectors: VectorIndex | None = None,
        *,
        speakers: Callable[[int], Iterable[str]] = lambda agent_id: (),
    ) -> None:
        self._db = db
        self._embedder = embedder
        self._speakers = speakers
        self._vectors = vectors or VectorIndex(db)
        self._rankings: OrderedDict[tuple, list[PassageRank]] = OrderedDict()
        self._lock = threading.Lock()

    def vector_candidates(
        self, agent_id: int, vector: np.ndarray, k: int = SEARCH_DEPTH
    ) -> tuple[np.ndarray, np.ndarray]:
        """The dense leg on its own: passage ids and cosine similarities, best first."""
        return self._vectors.top_k("passages", agent_id, vector, k)

    def follow(self, agent_id: int) -> None:
        """The agent's passages were written (and committed): the loaded vector index reads the
        change now, at the writer's cost, rather than at the next search's."""
        self._vectors.follow("passages", agent_id)

    def rank(self, agent_id: int, query: str) -> list[PassageRank]:
        query = query.strip()
        if not query:
            return []
        db = self._db
        token = (self._vectors.generation("passages", agent_id), row_changes(db, "passages", agent_id))
        key = (agent_id, query, token)
        with self._lock:
            if key in self._rankings:
                self._rankings.move_to_end(key)
                return self._rankings[key]
        scores: dict[int, float] = {}
        if self._embedder is not None:
            vector = self._embedder.embed([meaning_text(query, self._speakers(agent_id))])[0]
            ids, cosines = self.vector_candidates(agent_id, vector)
            scores = dict(zip(ids.tolist(), cosines.tolist(), strict=True))
        phrases = fts_phrases(query)
        if phrases:
            rows = best_matches(db.query, LEXICAL_INDEX, phrases, agent_id, SEARCH_DEPTH)
            best = max((r[1] for r in rows), default=0.0)
            for passage_id, bm25 in rows:
                if best > 0:
                    scores[passage_id] = scores.get(passage_id, 0.0) + LEXICAL_WEIGHT * bm25 / best
        ranked = sorted(((i, s) for i, s in scores.items() if s > 0), key=lambda item: (-item[1], item[0]))[
            :SEARCH_DEPTH
        ]
        result = [PassageRank(i, s) for i, s in ranked]
        with self._lock:
            self._rankings[key] = result
            while len(self._rankings) > CACHED_RANKINGS:
                self._rankings.popitem(last=False)
        return result
