"""archival_memory_search: vector candidates (in-memory int8/float index) fused with FTS5 BM25.

Passages whose vectors are still being computed are found through FTS alone, so a document is
searchable the moment its chunks are stored. The top ``SEARCH_DEPTH`` is computed once per query
and paged through, as MemGPT did.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from desktop.core.embedding import Embedder
from desktop.core.retrieval import vector_index
from desktop.core.retrieval.query import fts_query
from desktop.core.storage import Database

SEARCH_DEPTH = 100
#: Documents are prose written to be read, where dense similarity is the stronger signal; BM25 adds
#: exact names, numbers and rare words that MiniLM blurs.
LEXICAL_WEIGHT = 0.35

_rankings: "OrderedDict[tuple, list[tuple[int, float]]]" = OrderedDict()
_lock = threading.Lock()


def vector_candidates(db: Database, agent_id: int, vector: np.ndarray, k: int = SEARCH_DEPTH) -> tuple[np.ndarray, np.ndarray]:
    """The dense leg on its own: passage ids and cosine similarities, best first."""
    index = vector_index.loaded_index(db, "passages", agent_id)
    return vector_index.top_k(index, vector, k)


def rank_passages(db: Database, embedder: Embedder | None, agent_id: int, query: str) -> list[tuple[int, float]]:
    query = query.strip()
    if not query:
        return []
    token = (
        vector_index.generation(db, "passages", agent_id),
        tuple(db.query_one("SELECT COUNT(*), MAX(id) FROM passages WHERE agent_id = ?", (agent_id,))),
    )
    key = (id(db), agent_id, query, embedder is not None, token)
    with _lock:
        if key in _rankings:
            _rankings.move_to_end(key)
            return _rankings[key]
    scores: dict[int, float] = {}
    if embedder is not None:
        ids, cosines = vector_candidates(db, agent_id, embedder.embed([query])[0])
        scores = dict(zip(ids.tolist(), cosines.tolist()))
    match = fts_query(query)
    if match:
        rows = db.query(
            "SELECT f.rowid, -bm25(passages_fts) FROM passages_fts f JOIN passages p ON p.id = f.rowid"
            " WHERE passages_fts MATCH ? AND p.agent_id = ? ORDER BY bm25(passages_fts) LIMIT ?",
            (match, agent_id, SEARCH_DEPTH),
        )
        best = max((r[1] for r in rows), default=0.0)
        for passage_id, bm25 in rows:
            if best > 0:
                scores[passage_id] = scores.get(passage_id, 0.0) + LEXICAL_WEIGHT * bm25 / best
    result = sorted(((i, s) for i, s in scores.items() if s > 0), key=lambda item: (-item[1], item[0]))[:SEARCH_DEPTH]
    with _lock:
        _rankings[key] = result
        while len(_rankings) > 64:
            _rankings.popitem(last=False)
    return result


def search_passages(db: Database, embedder: Embedder | None, agent_id: int, query: str, page: int = 0, page_size: int = 5):
    """A PassagePage (desktop.core.memory.archival) whose hits carry their citations."""
    from desktop.core.memory.archival import _SELECT, PassageHit, PassagePage, _passage

    ranked = rank_passages(db, embedder, agent_id, query)
    hits = []
    for passage_id, score in ranked[page * page_size : (page + 1) * page_size]:
        row = db.query_one(f"{_SELECT} WHERE p.id = ?", (passage_id,))
        if row is not None:
            hits.append(PassageHit(_passage(row), score))
    return PassagePage(hits, len(ranked), page, page_size)
