"""What the learned ranker reads of each candidate: the search legs' signals and the question's.

The message ranker computes its legs over the whole timeline (BM25 of the best part, cosine,
neighbours, graph expansion, dates named, the named speaker, the asker, verbatim matches) and
combines them by hand (memdesk.core.retrieval.fusion). For a learned scorer it keeps a wider pool
of candidates (``pool``) and describes each by ``FEATURES``, from the arrays the legs already hold,
so nothing is searched twice. A model file names the features it was trained on; a model made for
another list is refused (memdesk.core.retrieval.learned).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from memdesk.core.retrieval import vector_codes
from memdesk.core.retrieval.query import terms
from memdesk.core.storage import Database

#: Candidates kept for the learned scorer: the hand fusion's best, and each leg's own best
#: (measured on the development data, docs/evaluation.md: the evidence a question needs beyond
#: the hand fusion's top 100 is mostly within its top 300, or a leg's own top 100).
POOL = 300
LEG_POOL = 100
#: The best candidates compared with each other by meaning for "a newer message about the same thing".
COMPARED = 40

QUESTION_WORDS = ("what", "when", "where", "who", "why", "how", "which")
_YES_NO = re.compile(r"^\s*(?:did|does|do|is|are|was|were|has|have|had|can|could|would|will|should)\b", re.I)
_QUANTITY = re.compile(r"\bhow\s+(?:many|much|long|often|old)\b", re.I)
_LATEST = re.compile(r"\b(?:now|current(?:ly)?|latest|last|recent(?:ly)?|updated?|newest|still|anymore)\b", re.I)
_FIRST_WORD = re.compile(r"[A-Za-z]+")

FEATURES = (
    # the lexical leg
    "lexical",  # BM25 of the best part, scaled by the query's best
    "lexical_rank",  # log2(1 + rank among the pool's lexical matches); 0 without a match
    "lexical_match",
    # the dense leg
    "cosine",  # raw cosine with the query
    "cosine_centred",  # re-centred on the conversation (fusion.centre_cosine)
    "cosine_rank",  # log2(1 + rank within the pool)
    # today's hand fusion, and what its parts added
    "fused",  # scaled by the query's best
    "fused_rank",
    "neighbour_lift",  # what the better neighbour lent (scaled)
    "graph",
    "date_named",
    "exact",
    # who said it
    "named_speaker",  # the question names one speaker, and it is this one
    "other_speaker",  # the question names one speaker, and this is someone else
    "asker",  # a question about oneself, and the asker said it
    # when
    "recency",  # 0 for the newest message of the conversation, 1 for the oldest
    "age_days",  # log1p of the days before the newest message
    # the neighbours in its session
    "previous_lexical",
    "next_lexical",
    "previous_cosine",
    "next_cosine",
    "session_best",  # the best fused score of a candidate of the same session (scaled)
    "session_hits",  # candidates of the same session among the fused top 20
    # its size
    "length",  # log1p of characters
    "parts",  # log2 of parts (a long message scored by its best part)
    # a newer message about the same thing
    "newer_similar",  # best cosine with a newer candidate among the COMPARED best
    "older_similar",
    # the question
    "q_terms",
    *(f"q_{w}" for w in QUESTION_WORDS),
    "q_yes_no",
    "q_quantity",
    "q_latest",
    "q_names_speaker",
    "q_about_oneself",
    "q_date",
    "q_size",  # log10 of the conversation's messages
)
INDEX = {name: i for i, name in enumerate(FEATURES)}


@dataclass
class Legs:
    """The search legs' arrays over a timeline (one value per message), as the ranker computed them."""

    lexical: np.ndarray  # scaled by the best, 0..1
    cosine: np.ndarray | None  # raw; None without the dense leg
    centred: np.ndarray | None
    lift: np.ndarray  # what the neighbours added to the fused score
    graph: np.ndarray | None
    dates: np.ndarray | None
    fused: np.ndarray  # the hand fusion's final score
    exact: np.ndarray  # bool
    named: np.ndarray | None  # bool: said by the one speaker the question names (None: names none)
    asker: np.ndarray | None  # bool: the asker's, for a question about oneself (None otherwise)
    about_oneself: bool
    has_date: bool


def _top(values: np.ndarray, size: int, mask: np.ndarray | None = None) -> np.ndarray:
    """Positions of the ``size`` largest ``values`` (within ``mask``), in no particular order."""
    candidates = np.arange(values.size) if mask is None else np.flatnonzero(mask)
    if len(candidates) <= size:
        return candidates
    part = np.argpartition(-values[candidates], size - 1)[:size]
    return candidates[part]


def pool(legs: Legs, size: int = POOL, leg_size: int = LEG_POOL) -> np.ndarray:
    """Timeline positions the learned scorer ranks, ascending: every verbatim match, the hand
    fusion's best ``size``, and the best ``leg_size`` of the lexical and the dense leg."""
    chosen = [np.flatnonzero(legs.exact), _top(legs.fused, size)]
    chosen.append(_top(legs.lexical, leg_size, legs.lexical > 0))
    if legs.cosine is not None:
        chosen.append(_top(legs.cosine, leg_size))
    return np.unique(np.concatenate(chosen))


def question_features(query: str, legs: Legs, size: int) -> dict[str, float]:
    words = terms(query)
    first = _FIRST_WORD.findall(query.casefold())
    asks = set(first[:3])  # "and when did ...", "so what ..."
    found = {f"q_{w}": float(w in asks) for w in QUESTION_WORDS}
    found.update(
        q_terms=float(len(words)),
        q_yes_no=float(bool(_YES_NO.search(query))),
        q_quantity=float(bool(_QUANTITY.search(query))),
        q_latest=float(bool(_LATEST.search(query))),
        q_names_speaker=float(legs.named is not None),
        q_about_oneself=float(legs.about_oneself),
        q_date=float(legs.has_date),
        q_size=float(np.log10(max(size, 1))),
    )
    return found


def _rank_of(values: np.ndarray) -> np.ndarray:
    """log2(1 + rank) of each value, the best ranked 1."""
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(values.size)
    ranks[order] = np.arange(1, values.size + 1)
    return np.log2(1 + ranks)


def candidate_features(
    query: str,
    legs: Legs,
    positions: np.ndarray,
    *,
    same_session: np.ndarray,
    times: np.ndarray,
    lengths: np.ndarray,
    parts: np.ndarray,
    vectors: Callable[[np.ndarray], np.ndarray | None] | None = None,
) -> np.ndarray:
    """The feature matrix (len(positions), len(FEATURES)) of these timeline positions.
    ``same_session``, ``times``, ``lengths``: the timeline's; ``parts``: each position's number of
    parts (1 for a short message); ``vectors(positions)``: their unit vectors (None without)."""
    n = legs.fused.size
    out = np.zeros((len(positions), len(FEATURES)))
    if not len(positions):
        return out

    def put(name: str, values) -> None:
        out[:, INDEX[name]] = values

    p = positions
    lexical = legs.lexical[p]
    put("lexical", lexical)
    matched = lexical > 0
    put("lexical_match", matched)
    if matched.any():
        ranks = np.zeros(len(p))
        ranks[matched] = _rank_of(lexical[matched])
        put("lexical_rank", ranks)
    if legs.cosine is not None and legs.centred is not None:
        put("cosine", legs.cosine[p])
        put("cosine_centred", legs.centred[p])
        put("cosine_rank", _rank_of(legs.cosine[p]))
    top = float(legs.fused.max()) if n else 0.0
    scale = top if top > 0 else 1.0
    fused = legs.fused[p] / scale
    put("fused", fused)
    put("fused_rank", _rank_of(fused))
    put("neighbour_lift", legs.lift[p] / scale)
    if legs.graph is not None:
        put("graph", legs.graph[p])
    if legs.dates is not None:
        put("date_named", legs.dates[p])
    put("exact", legs.exact[p])
    if legs.named is not None:
        put("named_speaker", legs.named[p])
        put("other_speaker", ~legs.named[p])
    if legs.asker is not None:
        put("asker", legs.asker[p])
    put("recency", (n - 1 - p) / max(n - 1, 1))
    newest = float(times[n - 1]) if n else 0.0
    put("age_days", np.log1p(np.maximum(newest - times[p], 0.0) / 86400))
    # neighbours: the turn before and after, in the same session
    before = np.maximum(p - 1, 0)
    after = np.minimum(p + 1, n - 1)
    has_before = (p > 0) & same_session[p]
    has_after = (p < n - 1) & same_session[after] & (after != p)
    put("previous_lexical", np.where(has_before, legs.lexical[before], 0.0))
    put("next_lexical", np.where(has_after, legs.lexical[after], 0.0))
    if legs.centred is not None:
        put("previous_cosine", np.where(has_before, legs.centred[before], 0.0))
        put("next_cosine", np.where(has_after, legs.centred[after], 0.0))
    # sessions among the candidates: a run of the timeline without a break between ``p`` and the next
    # candidate's position is one session when every step between them continues it
    session = _sessions(p, same_session)
    best = np.zeros(session.max() + 1)
    np.maximum.at(best, session, fused)
    put("session_best", best[session])
    leaders = np.argsort(-fused, kind="stable")[:20]
    hits = np.bincount(session[leaders], minlength=session.max() + 1)
    put("session_hits", hits[session])
    put("length", np.log1p(lengths[p]))
    put("parts", np.log2(np.maximum(parts, 1)))
    if vectors is not None:
        newer, older = _similar(p, fused, vectors)
        put("newer_similar", newer)
        put("older_similar", older)
    for name, value in question_features(query, legs, n).items():
        put(name, value)
    return out


def _sessions(positions: np.ndarray, same_session: np.ndarray) -> np.ndarray:
    """A session number for each of these ascending positions: the same when every message between
    two of them continues the session (a prefix sum over the timeline's breaks)."""
    breaks = np.cumsum(~same_session)  # the session each timeline position is in
    _, numbered = np.unique(breaks[positions], return_inverse=True)
    return numbered


def _similar(
    positions: np.ndarray, fused: np.ndarray, vectors: Callable[[np.ndarray], np.ndarray | None]
) -> tuple[np.ndarray, np.ndarray]:
    """For each of the ``COMPARED`` best candidates, the best cosine with a newer and with an older
    one of them (0 for the others, and where there is none)."""
    newer = np.zeros(len(positions))
    older = np.zeros(len(positions))
    best = np.sort(np.argsort(-fused, kind="stable")[:COMPARED])  # ascending: oldest first
    matrix = vectors(positions[best])
    if matrix is None or len(best) < 2:
        return newer, older
    similar = matrix @ matrix.T
    later = np.triu(np.ones((len(best), len(best)), dtype=bool), 1)  # j after i
    newer[best] = np.where(later, similar, -1.0).max(axis=1).clip(0)
    older[best] = np.where(later.T, similar, -1.0).max(axis=1).clip(0)
    return newer, older


def unit_vectors(db: Database, message_ids: np.ndarray) -> np.ndarray | None:
    """The messages' vectors (their float16 copies), in order, unit length; zeros for a message
    without one; None when none has one."""
    found, matrix = vector_codes.half_vectors(db, "messages", message_ids.tolist())
    if not len(found):
        return None
    out = np.zeros((len(message_ids), matrix.shape[1]), dtype=np.float32)
    place = {int(i): k for k, i in enumerate(found)}
    for row, message_id in enumerate(message_ids.tolist()):
        if message_id in place:
            out[row] = matrix[place[message_id]]
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms > 0, norms, 1.0)
