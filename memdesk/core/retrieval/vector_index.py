"""The vector search of one store: sign bits in memory propose, float16 copies re-score.

vec0 tables are the durable store of vectors; their search form (memdesk.core.retrieval.vector_codes)
is kept beside them in the same store. Per (kind, agent) this holds only the sign bits and ids in
memory (56 bytes a vector at 384-d: 56 MB for a million, read at open in a fraction of a second).
A query's Hamming distance to every vector (one pass over the packed bits, memdesk.core.retrieval.
sign_scan) proposes two thousand rows (more where a quarter of them could still be among the best:
near-duplicates, noise-like vectors); the query's own values against their bits order them; the
float16 copies of the first hundred are read by id and scored by cosine, and the list widens to
the rows whose estimates cannot rule them out; the best of those scored are the result. After a write only the blocks it
rewrote are read again (their ``stamp`` is newer), so a search right after a write costs what any
search costs, whatever the size of the index. An index small enough to hold its float16 rows in
memory (memdesk.core.retrieval.exact_rows: up to 87,381 vectors at 384-d) scores every row exactly
instead: there the sign bits saved little, and lost neighbours on noise-like vectors.

Measured before choosing (bench/vector_candidates.py, clustered 384-d vectors, README's
Benchmarks): the exact float32 product needs 1.5 GB at a million and a full reload after a write;
HNSW (USearch, faiss) searches faster but needs the graph in memory (more than the int8 vectors
alone), takes minutes to build and persists to a file beside the store (unencrypted); sqlite-vec's
own bit column searched in SQL measured 730 ms at 100k. Sign bits re-scored in a short list kept
recall@10 against exact search at 1.0 there at a few milliseconds.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable

import numpy as np

from memdesk.core.retrieval import exact_rows, sign_scan, vector_codes
from memdesk.core.retrieval.loaded_index import LoadedIndex
from memdesk.core.retrieval.vector_codes import BLOCK_ROWS
from memdesk.core.storage import Database

log = logging.getLogger("memdesk.retrieval.vectors")

#: Rows the Hamming distance proposes per query (at least this many, and this many per row of the
#: short list), ordered again in memory by the query's values against their sign bits (sign_scan.asymmetric).
CANDIDATES_MIN = 2000
CANDIDATES_FACTOR = 8
#: The list grows (four times at a step) up to this many while more than WIDEN_SHARE of it could
#: still reach the k-th best, as on noise-like vectors. 32,000 kept more of uniform noise's
#: neighbours at a million (0.644 against 0.61) but took the p95 on real text from 20 to 32 ms.
CANDIDATES_MAX = 8000
WIDEN_SHARE = 0.25
#: Of those, the rows whose float16 copies are read and scored exactly at first (at least, and per
#: result). Below this many rows an index scores every vector exactly (small indexes search exactly).
SHORTLIST_MIN = 100
SHORTLIST_FACTOR = 2
#: Then the list widens to the rows whose estimates cannot rule them out (sign_scan.floor), up to
#: this many per requested result (and at least WIDEN_MIN).
WIDEN_FACTOR = 40
WIDEN_MIN = 2000
#: Rows a conversation's cosines are computed exactly for (the rest are estimated from the bits).
COSINES_EXACT = 1000
#: Missing search forms (older stores) are read from vec0 row by row up to this many, else in one scan.
_POINT_READS = 2000

#: Each memory kind and the vec0 table holding its vectors (rowid = the row's id).
TABLES = {"passages": "passages_vec", "messages": "messages_vec"}


@functools.lru_cache(maxsize=8)
def _estimates(dimension: int) -> np.ndarray:
    """The cosine estimated from each Hamming distance 0..dimension (the angle is about pi times
    the share of differing bits), and 0 for an empty slot; read-only, shared by every query."""
    table = np.cos(np.pi * np.arange(dimension + 2, dtype=np.uint16) / dimension)
    table[dimension + 1] = 0.0  # the distance of an empty slot: no vector, no similarity
    table.flags.writeable = False
    return table


class VectorIndex:
    """The vector search of one store, one loaded index per (kind, agent). One object per store,
    built by the composition root and shared by the store's rankers: a cache that belongs to an
    object cannot answer for another store.

    ``reads`` counts the vectors read back from the store (vec0 or float16 copies): what a search
    costs in I/O, and what tests use to see that a write is not followed by a reload."""

    def __init__(self, db: Database, exact_bytes: int = exact_rows.EXACT_BYTES) -> None:
        """``exact_bytes``: the float16 rows an index may hold to score every row exactly (0: none,
        the sign bits always search)."""
        self._db = db
        self._exact_bytes = exact_bytes
        self._loaded: dict[tuple[str, int], LoadedIndex] = {}
        self._lock = threading.Lock()
        self.reads = 0

    def generation(self, kind: str, agent_id: int) -> int:
        """Moves whenever the vectors of (kind, agent) change (the m002 triggers): the rankers' cache key."""
        value = self._db.scalar("SELECT gen FROM vector_generation WHERE kind = ? AND agent_id = ?", (kind, agent_id))
        return int(value or 0)

    def warm(self, kind: str, agent_id: int) -> None:
        """Load (kind, agent) now, a small index's float16 rows too, so the first search does not wait."""
        index = self.loaded(kind, agent_id)
        with index.lock:
            if index.count > SHORTLIST_MIN:
                self._exact(kind, index)

    def follow(self, kind: str, agent_id: int) -> None:
        """A writer's commit into (kind, agent) read now, if that index is loaded, not by the next search."""
        with self._lock:
            index = self._loaded.get((kind, agent_id))
        if index is not None and index.used:
            self.loaded(kind, agent_id)

    def warm_in_background(self, agent_id: int, *also: Callable[[int], object]) -> threading.Thread:
        """Load both of an agent's indexes in a thread, then run ``also`` (other search state of the
        agent, such as the conversation's timeline): an agent was opened, and its first reply's
        automatic recall should not spend its deadline reading them. A search meanwhile waits for
        the load in progress rather than starting another."""

        def run() -> None:
            try:
                for kind in TABLES:
                    self.warm(kind, agent_id)
                for load in also:
                    load(agent_id)
            except Exception:  # the store closed under it, say: the first search loads instead
                log.warning("loading the vector index of agent %s in the background failed", agent_id, exc_info=True)

        thread = threading.Thread(target=run, name=f"vector-index-{agent_id}", daemon=True)
        thread.start()
        return thread

    def loaded(self, kind: str, agent_id: int) -> LoadedIndex:
        with self._lock:
            index = self._loaded.setdefault((kind, agent_id), LoadedIndex())
        with index.lock:
            if not index.checked and self._db.has_table(TABLES[kind]):
                self._complete(kind, agent_id)
                index.checked = True
            latest = vector_codes.latest_stamp(self._db, kind, agent_id)
            if latest > index.stamp and not index.used:
                self._open(index, kind, agent_id, latest)
            elif latest > index.stamp:
                for block in vector_codes.blocks(self._db, kind, agent_id, after_stamp=index.stamp):
                    index.place(block)
            if index.exact.rows is not None:  # kept: the blocks just placed are read now, not by a search
                self._exact(kind, index)
        return index

    def _exact(self, kind: str, index: LoadedIndex) -> bool:
        """Bring a small index's float16 rows up to date (call holding its lock); False when the
        index is too large to keep them (they are let go), or when the store's other indexes hold
        their share already (an agent's messages and passages: twice one index's budget; a server
        searching many agents' memories must not hold every one's rows)."""
        with self._lock:
            others = sum(i.exact.nbytes for i in self._loaded.values() if i is not index)
        if not exact_rows.fits(index.used, index.dimension, min(self._exact_bytes, 2 * self._exact_bytes - others)):
            index.exact.clear()
            return False

        def read(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            found, matrix = vector_codes.half_rows(self._db, kind, ids.tolist())
            self.reads += len(found)
            return found, matrix

        gone = index.exact.refresh(index.ids, index.used, read)
        if len(gone):  # deleted without going through memory (their float16 copy went by cascade)
            index.drop(gone)
        return index.exact.rows is not None

    def _open(self, index: LoadedIndex, kind: str, agent_id: int, latest: int) -> None:
        """Every block, a page at a time, into room made once for all of them (no copies as it
        fills). Blocks rewritten while the pages are read have stamps above ``latest``: the next
        look reads them again."""
        last = vector_codes.last_block(self._db, kind, agent_id)
        for block in vector_codes.every_block(self._db, kind, agent_id):
            if len(block.ids) and not index.dimension:
                index.reserve((last + 1) * BLOCK_ROWS, -(-block.bits.shape[1] * 8 // 64))
            index.place(block)
        index.stamp = latest

    def _complete(self, kind: str, agent_id: int) -> None:
        """Check the search form against the store and fill in what is missing, from vec0 (stores
        written before it existed, or by a version that did not write it). Derived data: rebuilt
        from the store whenever it falls short."""
        if vector_codes.known_complete(self._db, kind, agent_id):
            return
        missing = vector_codes.missing(self._db, kind, agent_id)
        if not missing:  # a message edited since it was embedded: its new vector is on its way
            return
        log.info("building the search form of %s %s vectors of agent %s", len(missing), kind, agent_id)
        table = TABLES[kind]
        if len(missing) <= _POINT_READS:
            rows = [
                r
                for i in missing
                for r in self._db.query(f"SELECT rowid, embedding FROM {table} WHERE rowid = ?", (i,))
            ]
        else:
            wanted = set(missing)
            rows = [
                r
                for r in self._db.query(f"SELECT rowid, embedding FROM {table} WHERE agent_id = ?", (agent_id,))
                if r[0] in wanted
            ]
        self.reads += len(rows)
        if not rows:
            return
        rows.sort()
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
        with self._db.transaction():
            vector_codes.write(self._db, kind, agent_id, [r[0] for r in rows], matrix)

    def memory_bytes(self) -> int:
        """What the loaded indexes keep in memory (ids, sign bits, each id's slot, a small index's rows)."""
        with self._lock:
            loaded = list(self._loaded.values())
        return sum(
            index.ids.nbytes + index.words.nbytes + index.slot_of.nbytes + index.exact.nbytes for index in loaded
        )

    def count(self, kind: str, agent_id: int) -> int:
        return self.loaded(kind, agent_id).count

    def top_k(self, kind: str, agent_id: int, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest vectors by cosine: (ids, similarities), best first."""
        index = self.loaded(kind, agent_id)
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        query = np.ascontiguousarray(query, dtype=np.float32)
        size = max(SHORTLIST_MIN, SHORTLIST_FACTOR * k)
        with index.lock:
            valid = index.count
            if valid <= size:  # a tiny index: every row scored exactly
                return _best(*self._rescore(kind, np.unique(index.ids[index.ids >= 0]), query, index), k)
            # a small one: every row scored exactly, from memory (``loaded`` brought held rows up to date)
            if index.exact.rows is not None or self._exact(kind, index):
                return self._exact_best(kind, index, query, k)
            distance = index.hamming(query)
            wanted = min(valid, max(CANDIDATES_MIN, CANDIDATES_FACTOR * size))
            candidates, estimates = self._estimated(index, query, distance, wanted)
        ids, scores = self._rescore(kind, candidates[:size], query, index)
        if not len(ids):
            return ids, scores
        lowest = sign_scan.floor(_estimates_of(ids, candidates[:size], estimates[:size]), scores, min(k, len(ids)))
        reach = len(candidates) if lowest is None else int(np.searchsorted(-estimates, -lowest, "right"))
        # Where more than a share of the list could still reach the k-th best, the Hamming distance
        # separates the rows poorly (noise-like vectors), and rows it left out could reach it too:
        # the list grows before it is narrowed.
        limit, first = min(valid, CANDIDATES_MAX), size
        while lowest is not None and reach > WIDEN_SHARE * wanted and wanted < limit:
            wanted, first = min(limit, 4 * wanted), 0
            with index.lock:
                candidates, estimates = self._estimated(index, query, distance, wanted)
            reach = int(np.searchsorted(-estimates, -lowest, "right"))
        more = candidates[first:reach]
        if not first:  # a grown list: the rows already scored are somewhere in it
            more = more[~np.isin(more, ids)]
        more = more[: max(WIDEN_MIN, WIDEN_FACTOR * k) - len(ids)]
        if len(more):
            extra_ids, extra = self._rescore(kind, more, query, index)
            ids, scores = np.concatenate([ids, extra_ids]), np.concatenate([scores, extra])
        return _best(ids, scores, k)

    def _exact_best(self, kind: str, index: LoadedIndex, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best of a small index's rows held in memory (call holding its lock): every row
        scored with the query in float16, then the rows within its rounding of the k-th best scored
        with the float32 query, as the short list is. Rows deleted behind memory's back still have
        their rows here: the winners are checked against the store, and the missing ones dropped."""
        scores = index.exact.scores(query, index.used)
        scores[index.empty_slots()] = -np.inf
        slack = index.exact.slack(query)
        while True:
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            near = np.flatnonzero(scores >= kth - slack) if np.isfinite(kth) else np.flatnonzero(np.isfinite(scores))
            ids, best = _best(index.ids[near], index.exact.rescored(near, query), k)
            found = vector_codes.present(self._db, kind, ids.tolist())
            gone = np.asarray([i for i in ids.tolist() if i not in found], dtype=np.int64)  # ten ids: no NumPy set
            if not len(gone):
                return ids, best
            scores[index.slots(gone)] = -np.inf
            index.drop(gone)

    def cosines(self, kind: str, agent_id: int, query: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The cosine of ``query`` with each of ``ids`` (0 where a row has no vector): scored from the
        float16 copy for the short list, estimated from the sign bits for the rest (the angle is
        about pi times the share of differing bits; those rows are far from the query anyway)."""
        index = self.loaded(kind, agent_id)
        out = np.zeros(len(ids), dtype=np.float64)
        if not len(ids):
            return out
        ids = np.asarray(ids, dtype=np.int64)
        query = np.ascontiguousarray(query, dtype=np.float32)
        with index.lock:
            if not index.dimension:
                return out
            distance = index.hamming(query)
            slots = index.slots(ids)
            # the estimate of each possible distance, looked up: one cosine per distance, not per row
            # (an id the index does not hold takes the empty slots' distance, whose estimate is 0)
            at = distance[slots]
            at[slots < 0] = index.dimension + 1
            out = _estimates(index.dimension)[at]
            candidates = self._shortlist(index, query, COSINES_EXACT, distance)[:COSINES_EXACT]
        exact_ids, exact = self._rescore(kind, candidates, query, index)
        ascending = len(ids) < 2 or bool(np.all(ids[1:] > ids[:-1]))  # a timeline's ids are: no sort needed
        order = np.arange(len(ids)) if ascending else np.argsort(ids)
        sorted_ids = ids if ascending else ids[order]
        where = np.searchsorted(sorted_ids, exact_ids)
        hit = where < len(sorted_ids)
        hit[hit] = sorted_ids[where[hit]] == exact_ids[hit]
        out[order[where[hit]]] = exact[hit]
        return out

    def _shortlist(
        self, index: LoadedIndex, query: np.ndarray, size: int, distance: np.ndarray | None = None
    ) -> np.ndarray:
        """The ids worth scoring exactly, best estimate first (every id when the index is small)."""
        valid = index.count
        if valid <= size:
            return np.unique(index.ids[index.ids >= 0])
        distance = index.hamming(query) if distance is None else distance
        return self._estimated(index, query, distance, min(valid, max(CANDIDATES_MIN, CANDIDATES_FACTOR * size)))[0]

    @staticmethod
    def _estimated(
        index: LoadedIndex, query: np.ndarray, distance: np.ndarray, size: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``size`` closest rows by Hamming distance, ordered again by the query's values against
        their bits (sign_scan.asymmetric): (ids, estimates), best estimate first."""
        slots = sign_scan.closest(distance, size)
        estimates = sign_scan.asymmetric(index.words, slots, query)
        order = np.argsort(-estimates, kind="stable")
        ids, estimates = index.ids[slots[order]], estimates[order]
        keep = ids >= 0  # a slot emptied since the distances were taken
        return (ids, estimates) if keep.all() else (ids[keep], estimates[keep])

    def _rescore(
        self, kind: str, candidates: np.ndarray, query: np.ndarray, index: LoadedIndex | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        ids, matrix = vector_codes.half_vectors(self._db, kind, candidates.tolist())
        self.reads += len(ids)
        if index is not None and len(ids) < len(candidates):
            # Rows deleted without going through memory (their float16 copy went by cascade) leave
            # their bits behind: out of this index's memory they go, so they take no more places.
            gone = np.setdiff1d(candidates, ids)
            with index.lock:
                index.drop(gone)
        if not len(ids):
            return ids, np.zeros(0, dtype=np.float32)
        return ids, matrix @ query


def _estimates_of(ids: np.ndarray, candidates: np.ndarray, estimates: np.ndarray) -> np.ndarray:
    """The estimates of ``ids`` (a subset of ``candidates``, in any order)."""
    order = np.argsort(candidates)
    return estimates[order][np.searchsorted(candidates[order], ids)]


def _best(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of scored rows, best first (ties by id)."""
    k = min(k, len(ids))
    best = np.argpartition(-scores, k - 1)[:k] if k < len(ids) else np.arange(len(ids))
    best = best[np.lexsort((ids[best], -scores[best]))]
    return ids[best], scores[best]
