"""Score fusion, kept pure so it can be unit-tested without a store.

Measured on LoCoMo (see memdesk/core/retrieval/messages.py for the weights): BM25 alone beats
dense cosine, and equal-weight reciprocal-rank fusion loses to BM25. What works is a weighted sum of
BM25 scaled by the query's best BM25 and a cosine re-centred on the collection (so a merely average
message contributes nothing), plus a share of the better neighbouring turn's score: answers are
often spread over a question and its reply.
"""

from __future__ import annotations

import numpy as np


def scale_by_max(scores: np.ndarray) -> np.ndarray:
    """Positive scores divided by their maximum; a query with no match stays all zero."""
    top = float(scores.max()) if scores.size else 0.0
    return scores / top if top > 0 else np.zeros_like(scores)


def centre_cosine(scores: np.ndarray) -> np.ndarray:
    """Cosine mapped so the collection mean is 0 and the best match is 1.

    Raw MiniLM cosines crowd into 0.1-0.5 whatever the query; re-centring makes the dense weight
    mean the same thing for every query."""
    if scores.size == 0:
        return scores
    mean = float(scores.mean())
    spread = float(scores.max()) - mean
    return (scores - mean) / spread if spread > 1e-9 else np.zeros_like(scores)


def weighted_sum(lexical: np.ndarray, dense: np.ndarray, dense_weight: float) -> np.ndarray:
    return lexical + dense_weight * dense


def neighbour_boost(scores: np.ndarray, same_as_previous: np.ndarray, alpha: float) -> np.ndarray:
    """Add ``alpha`` times the better of the previous and next item's score, counting only
    neighbours in the same session (``same_as_previous[i]``: item i continues item i-1's session)."""
    if scores.size < 2 or alpha == 0:
        return scores.copy()
    previous = np.zeros_like(scores)
    following = np.zeros_like(scores)
    previous[1:] = np.where(same_as_previous[1:], scores[:-1], 0.0)
    following[:-1] = np.where(same_as_previous[1:], scores[1:], 0.0)
    return scores + alpha * np.maximum(previous, following)


def rank(scores: np.ndarray, first: np.ndarray | None = None, limit: int | None = None) -> np.ndarray:
    """Positions by descending score, ties newest (highest position) first; ``first`` (a boolean
    mask) is ranked ahead of everything else whatever its score."""
    order = np.lexsort((-np.arange(scores.size), -scores))
    if first is not None and first.any():
        order = np.concatenate([order[first[order]], order[~first[order]]])
    return order if limit is None else order[:limit]


def best(scores: np.ndarray, mask: np.ndarray, limit: int | None) -> np.ndarray:
    """The positions in ``mask`` by descending score, ties newest first (``rank``'s order), at most ``limit``."""
    candidates = np.flatnonzero(mask)
    if limit is not None and len(candidates) > limit:
        values = scores[candidates]
        kth = np.partition(values, len(values) - limit)[len(values) - limit]
        candidates = candidates[values >= kth]
    order = candidates[np.lexsort((-candidates, -scores[candidates]))]
    return order if limit is None else order[:limit]
