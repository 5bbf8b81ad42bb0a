"""A small index scores every row exactly, from float16 copies held in memory.

Below a few tens of thousands of vectors the sign bits save little: NumPy's exact float32 product
over the whole matrix takes a millisecond or two, and on noise-like vectors (where the bits separate
neighbours poorly) the sign-bit search re-scores thousands of rows read from the store, up to four
times the exact product's time at 10,000 rows. Holding the float16 copy of every row (half the
float32 matrix) and scoring all of them with SimSIMD's float16 kernels (one pass, float32
accumulation) is exact on any vectors and reads half the memory NumPy's product does: bench.search
measured 0.72-0.83 of NumPy's time at 10,000 uniform random rows and 0.47-0.56 at 60,000-85,000
(docs/benchmarks.md, "A small index scores every row"). Above ``EXACT_BYTES`` the rows are let go
and the sign bits search, which needs no more memory than its bits.

The rows sit in the index's slots (``BLOCK_ROWS`` a block, as the sign bits do): a block the index
places again (a write, a removal) is read again from the store, the others stay.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import simsimd

from memdesk.core.retrieval.vector_codes import BLOCK_ROWS

# SimSIMD's kernel for Sapphire Rapids (AVX512-FP16, the "Intel with AMX" machines) adds the
# products in float16 (a rounding of 1/2048 at every addition); every other x86 kernel converts
# to float32 first, which the slack below assumes. So that one is never used.
simsimd.disable_capability("sapphire")

#: The float16 rows one index may hold in memory: 87,381 vectors at 384-d (a store's indexes
#: together hold twice that at most: memdesk.core.retrieval.vector_index).
EXACT_BYTES = 64 * 1024 * 1024

#: Reads the float16 copies of row ids: (ids found, float16 matrix).
ReadRows = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def fits(slots: int, dimension: int, budget: int = EXACT_BYTES) -> bool:
    """Whether an index of ``slots`` rows of ``dimension`` values keeps its rows within ``budget`` bytes."""
    return 0 < slots * dimension * 2 <= budget


class ExactRows:
    """The float16 rows of one index's slots, or none (not kept: too large, or not asked for yet)."""

    def __init__(self) -> None:
        self.rows: np.ndarray | None = None
        self._stale: set[int] = set()  # blocks placed since their rows were read

    def placed(self, block: int) -> None:
        """The index placed ``block`` again: its rows are read before the next scoring."""
        if self.rows is not None:
            self._stale.add(block)

    def clear(self) -> None:
        self.rows, self._stale = None, set()

    @property
    def nbytes(self) -> int:
        return 0 if self.rows is None else self.rows.nbytes

    def refresh(self, ids: np.ndarray, used: int, read: ReadRows) -> np.ndarray:
        """Bring the rows of slots [0, used) up to date with ``ids`` (the index's id per slot, -1
        for none): every block the first time, then the blocks placed since. Returns the ids that
        have no float16 copy (deleted without going through memory), for the index to drop."""
        if self.rows is not None and not self._stale and len(self.rows) >= used:
            return np.zeros(0, dtype=np.int64)
        blocks = range(-(-used // BLOCK_ROWS)) if self.rows is None else sorted(self._stale)
        slots = np.concatenate(
            [np.arange(b * BLOCK_ROWS, min((b + 1) * BLOCK_ROWS, used)) for b in blocks]
            or [np.zeros(0, dtype=np.int64)]
        ).astype(np.int64)
        slots = slots[ids[slots] >= 0]
        wanted = ids[slots]
        found, matrix = read(wanted)
        if self.rows is None or len(self.rows) < len(ids) or (len(found) and matrix.shape[1] != self.rows.shape[1]):
            self._grow(len(ids), matrix.shape[1] if len(found) else None)
        self._stale.clear()
        if self.rows is None:  # nothing read, and no width known yet: nothing to score from
            return np.setdiff1d(wanted, found)
        for b in blocks:  # what the blocks held before is gone (rows removed, another dimension)
            self.rows[b * BLOCK_ROWS : (b + 1) * BLOCK_ROWS] = 0
        if len(found):
            order = np.argsort(wanted, kind="stable")
            at = order[np.searchsorted(wanted[order], found)]
            self.rows[slots[at]] = matrix
        return np.setdiff1d(wanted, found)

    def _grow(self, size: int, width: int | None) -> None:
        """Room for ``size`` slots, the rows held so far kept, unless the width changes: they are
        dropped (a width changes only when the store's vectors were all replaced, which places
        every block again)."""
        old = self.rows
        if width is None:
            width = None if old is None else old.shape[1]
        if width is None:
            self.rows = None
            return
        rows = np.zeros((max(size, 0 if old is None else len(old)), width), dtype=np.float16)
        if old is not None and old.shape[1] == width:
            rows[: len(old)] = old
        self.rows = rows

    def scores(self, query: np.ndarray, used: int) -> np.ndarray:
        """The query's dot product with the rows of slots [0, used), the query rounded to float16 as
        the kernel needs (within ``slack(query)`` of the exact product): float64, 0 for empty slots."""
        assert self.rows is not None and used > 0
        half = np.ascontiguousarray(query, dtype=np.float16)[None, :]
        return np.asarray(simsimd.cdist(half, self.rows[:used], metric="dot"), dtype=np.float64)[0]

    @staticmethod
    def slack(query: np.ndarray) -> float:
        """How far ``scores`` may be from the product with the float32 query, for rows of norm up
        to about 1 (unit vectors in float16): the rounding error of the query, twice, and a little."""
        query = np.asarray(query, dtype=np.float32)
        return 2.0 * float(np.linalg.norm(query - query.astype(np.float16).astype(np.float32))) + 1e-6

    def rescored(self, slots: np.ndarray, query: np.ndarray) -> np.ndarray:
        """The rows of ``slots`` against the float32 query: what re-scoring a short list gives."""
        assert self.rows is not None
        return self.rows[slots].astype(np.float32) @ np.asarray(query, dtype=np.float32)
