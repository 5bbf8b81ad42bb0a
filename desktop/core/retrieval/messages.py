"""conversation_search: exact substring matches first, then BM25 + vector fusion over turns.

Messages get vectors lazily: the first search after new messages embeds them in one batch, so the
chat step never waits for the embedder. ``index_pending_messages`` may also be called from idle
time to do that work early.

Weights were tuned on LoCoMo conv-26/30/41 and checked on conv-42/43 (see the eval command).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
import numpy as np

from desktop.core.clock import parse_iso
from desktop.core.embedding import Embedder
from desktop.core.retrieval import fusion, vector_index
from desktop.core.retrieval.query import fts_query, mentioned_names
from desktop.core.retrieval.space import ensure_space
from desktop.core.storage import Database

DENSE_WEIGHT = 0.8
NEIGHBOUR_ALPHA = 0.4
#: Weight of knowledge-graph expansion when it is on (see graph_expansion and the LoCoMo eval).
GRAPH_WEIGHT = 0.15
SPEAKER_BOOST = 0.05
#: Turns further apart than this are not one conversation, so they do not lend each other score.
SESSION_GAP_SECONDS = 6 * 3600
SEARCH_DEPTH = 100
LEXICAL_DEPTH = 200
EMBED_BATCH = 64


@dataclass(frozen=True)
class RankedMessage:
    message: "Message"  # noqa: F821 - desktop.core.memory.recall.Message
    score: float
    exact: bool  # the query occurs in the message verbatim (case-insensitive)


@dataclass(frozen=True)
class RankedMessagePage:
    hits: list[RankedMessage]
    total: int
    page: int
    page_size: int


def embedding_text(search_text: str, author: str | None) -> str:
    """The speaker is part of what a turn means ("what did Caroline say..."), so it is embedded too."""
    return f"{author}: {search_text}" if author else search_text


def index_pending_messages(db: Database, embedder: Embedder, agent_id: int) -> int:
    """Embed every searchable message of the agent that has no vector yet. Returns how many."""
    ensure_space(db, embedder)
    done = 0
    while True:
        rows = db.query(
            "SELECT id, search_text, author FROM messages WHERE agent_id = ? AND embedded = 0 AND search_text != '' ORDER BY id LIMIT ?",
            (agent_id, EMBED_BATCH * 8),
        )
        if not rows:
            return done
        vectors = embedder.embed([embedding_text(r[1], r[2]) for r in rows])
        with db.transaction():
            for row, vector in zip(rows, vectors):
                db.execute("DELETE FROM messages_vec WHERE rowid = ?", (row[0],))
                db.execute(
                    "INSERT INTO messages_vec(rowid, agent_id, embedding) VALUES (?, ?, ?)",
                    (row[0], agent_id, np.asarray(vector, dtype="<f4").tobytes()),
                )
            db.executemany("UPDATE messages SET embedded = 1 WHERE id = ?", [(r[0],) for r in rows])
        done += len(rows)


@dataclass
class _Timeline:
    token: tuple
    ids: np.ndarray
    position: dict[int, int]
    authors: np.ndarray
    same_session: np.ndarray  # item i continues item i-1's conversation


_timelines: dict[tuple[int, int], _Timeline] = {}
_rankings: "OrderedDict[tuple, list[tuple[int, float, bool]]]" = OrderedDict()
_lock = threading.Lock()


def _timeline(db: Database, agent_id: int) -> _Timeline:
    token = tuple(db.query_one("SELECT COUNT(*), MAX(id) FROM messages WHERE agent_id = ?", (agent_id,)))
    key = (id(db), agent_id)
    cached = _timelines.get(key)
    if cached is not None and cached.token == token:
        return cached
    rows = db.query("SELECT id, created_at, author FROM messages WHERE agent_id = ? AND search_text != '' ORDER BY id", (agent_id,))
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    times = np.array([parse_iso(r[1]).timestamp() for r in rows], dtype=np.float64)
    same = np.zeros(len(rows), dtype=bool)
    same[1:] = np.abs(np.diff(times)) <= SESSION_GAP_SECONDS
    timeline = _Timeline(token, ids, {int(i): n for n, i in enumerate(ids)}, np.array([r[2] or "" for r in rows], dtype=object), same)
    _timelines[key] = timeline
    return timeline


def rank_messages(
    db: Database, embedder: Embedder | None, agent_id: int, query: str, *, dense: bool = True, graph_weight: float = 0.0
) -> list[tuple[int, float, bool]]:
    """Every result of the query as (message id, score, exact), best first; computed once per query.
    ``graph_weight`` > 0 adds knowledge-graph expansion (desktop.core.retrieval.graph_expansion)."""
    query = query.strip()
    if not query:
        return []
    if dense and embedder is not None:
        index_pending_messages(db, embedder, agent_id)
    timeline = _timeline(db, agent_id)
    key = (id(db), agent_id, query, dense and embedder is not None, timeline.token, vector_index.generation(db, "messages", agent_id), graph_weight)
    if graph_weight > 0:  # the graph grows in the background and users edit it from another connection
        key += (db.scalar("SELECT MAX(id) FROM graph_mentions WHERE agent_id = ?", (agent_id,)), db.scalar("PRAGMA data_version"))
    with _lock:
        if key in _rankings:
            _rankings.move_to_end(key)
            return _rankings[key]
    n = len(timeline.ids)
    lexical = np.zeros(n)
    match = fts_query(query)
    if match:
        rows = db.query(
            "SELECT f.rowid, -bm25(messages_fts) FROM messages_fts f JOIN messages m ON m.id = f.rowid"
            " WHERE messages_fts MATCH ? AND m.agent_id = ? ORDER BY bm25(messages_fts) LIMIT ?",
            (match, agent_id, LEXICAL_DEPTH),
        )
        for message_id, score in rows:
            if message_id in timeline.position:
                lexical[timeline.position[message_id]] = score
    scores = fusion.scale_by_max(lexical)
    if dense and embedder is not None and n:
        index = vector_index.loaded_index(db, "messages", agent_id)
        cosine = np.zeros(n)
        for message_id, value in vector_index.all_scores(index, embedder.embed([query])[0]).items():
            if message_id in timeline.position:
                cosine[timeline.position[message_id]] = value
        scores = fusion.weighted_sum(scores, fusion.centre_cosine(cosine), DENSE_WEIGHT)
        scores = fusion.neighbour_boost(scores, timeline.same_session, NEIGHBOUR_ALPHA)
    if graph_weight > 0 and n:
        from desktop.core.retrieval.graph_expansion import expansion_scores

        expansion = expansion_scores(db, agent_id, query, timeline.position, n)
        if expansion is not None:
            scores = scores + graph_weight * expansion
    names = mentioned_names(query, sorted({a for a in timeline.authors if a}))
    if len(names) == 1:
        scores = scores + SPEAKER_BOOST * (timeline.authors == next(iter(names)))
    _register_contains(db)
    exact_ids = {r[0] for r in db.query(
        "SELECT id FROM messages WHERE agent_id = ? AND search_text != '' AND memdesk_contains(search_text, ?)", (agent_id, query)
    )}
    exact = np.array([int(i) in exact_ids for i in timeline.ids], dtype=bool)
    order = fusion.rank(scores, first=exact)
    # Every exact match stays reachable by paging; beyond them, the best SEARCH_DEPTH that score.
    keep = [p for k, p in enumerate(order) if exact[p] or (k < len(exact_ids) + SEARCH_DEPTH and scores[p] > 0)]
    result = [(int(timeline.ids[p]), float(scores[p]), bool(exact[p])) for p in keep]
    with _lock:
        _rankings[key] = result
        while len(_rankings) > 64:
            _rankings.popitem(last=False)
    return result


_registered: "weakref.WeakSet[Database]" = weakref.WeakSet()


def _register_contains(db: Database) -> None:
    if db not in _registered:
        from desktop.core.memory.recall import _contains

        db.create_function("memdesk_contains", 2, _contains)
        _registered.add(db)


def search_messages(
    db: Database, embedder: Embedder | None, agent_id: int, query: str, page: int = 0, page_size: int = 5
) -> RankedMessagePage:
    from desktop.core.memory.recall import _COLUMNS, _message

    ranked = rank_messages(db, embedder, agent_id, query)
    window = ranked[page * page_size : (page + 1) * page_size]
    hits = []
    for message_id, score, exact in window:
        row = db.query_one(f"SELECT {_COLUMNS} FROM messages WHERE id = ?", (message_id,))
        if row is not None:
            hits.append(RankedMessage(_message(row), score, exact))
    return RankedMessagePage(hits, len(ranked), page, page_size)
