"""The scan behind the vector index: Hamming distances over packed sign bits, and the query's own
values scored against the sign bits of a short list.

Everything is whole-array NumPy work over contiguous memory, with no Python per row: a million
384-bit codes are 48 MB, read once per query in blocks small enough that the scratch arrays stay in
the CPU's cache (one XOR, one ``bitwise_count`` and one column sum per block of ``BLOCK`` codes,
three calls where a word at a time took eighteen).

The second stage exists because sign bits alone blur real embeddings: MiniLM's vectors are not
centred, so many dimensions have the same sign in most texts and say little. Scored against the
query's float values instead of its signs (``asymmetric``: the sum of the query's components
where a row's bit is set), each dimension weighs what it weighs in the query, which orders a wide
Hamming short list far closer to the exact order; only the best of it is then read in float16.
"""

from __future__ import annotations

import functools

import numpy as np

#: Codes compared per block: (words x BLOCK) uint64 scratch, 768 KB at 384 bits, inside L2.
BLOCK = 16384
#: closest() guesses its cut from every SAMPLE_EVERY-th distance (a million become 62,500 to count).
SAMPLE_EVERY = 16
#: How far above the line through the scored rows a row's cosine may lie, in standard deviations of
#: the rows' distance from it, and still be scored: 3 kept every true neighbour in the measurements
#: (bench/dense_recall.py) and reads a few rows more only where the estimates are ambiguous.
WIDEN_SIGMAS = 3.0


def hamming(words: np.ndarray, query: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Bits differing between ``query`` ((W,) uint64) and each code of ``words`` ((W, slots) uint64,
    one row per word): (slots,) uint16."""
    width, slots = words.shape
    out = np.empty(slots, dtype=np.uint16) if out is None else out
    if not slots:
        return out
    step = min(BLOCK, slots)
    differ = np.empty((width, step), dtype=np.uint64)
    count = np.empty((width, step), dtype=np.uint8)
    mask = np.ascontiguousarray(query, dtype=np.uint64)[:, None]
    for start in range(0, slots, step):
        end = min(start + step, slots)
        n = end - start
        np.bitwise_xor(words[:, start:end], mask, out=differ[:, :n])
        np.bitwise_count(differ[:, :n], out=count[:, :n])
        np.sum(count[:, :n], axis=0, dtype=np.uint16, out=out[start:end])
    return out


def closest(distance: np.ndarray, size: int) -> np.ndarray:
    """Positions of the ``size`` smallest distances (any order), without sorting a million: a
    sample of every ``SAMPLE_EVERY``-th distance guesses a cut a little above the size-th smallest
    (counting distances, not sorting them), every distance at or under it is taken, and only those
    are partitioned. A guess that takes too few falls back to counting every distance."""
    if size >= len(distance):
        return np.arange(len(distance))
    picked = np.zeros(0, dtype=np.intp)
    if len(distance) >= 64 * SAMPLE_EVERY:
        wanted = int(size / SAMPLE_EVERY * 1.5) + 1
        cut = int(np.searchsorted(np.cumsum(np.bincount(distance[::SAMPLE_EVERY])), wanted))
        picked = np.flatnonzero(distance <= cut)
    if len(picked) < size:  # small, or the sample guessed low: count them all
        cut = int(np.searchsorted(np.cumsum(np.bincount(distance)), size))
        picked = np.flatnonzero(distance <= cut)
    if len(picked) > size:
        picked = picked[np.argpartition(distance[picked], size - 1)[:size]]
    return picked


@functools.lru_cache(maxsize=1)
def _byte_bits() -> np.ndarray:
    """Each byte value's 8 bits, most significant first (np.packbits' order): (256, 8) float32."""
    bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float32)
    bits.flags.writeable = False
    return bits


def asymmetric(words: np.ndarray, slots: np.ndarray, query: np.ndarray) -> np.ndarray:
    """For each of ``slots``, the sum of ``query``'s components whose sign bit is set in that slot's
    code: the query's product with the row's sign vector, up to a constant (``2 * s - sum(query)``),
    so a larger value is a closer row. (len(slots),) float32."""
    query = np.asarray(query, dtype=np.float32)
    width = words.shape[0]
    padded = np.zeros(width * 64, dtype=np.float32)
    padded[: len(query)] = query
    # tables[b, v]: what byte value v at byte b adds (the query's components under its set bits)
    tables = padded.reshape(-1, 8) @ _byte_bits().T
    # The rows' codes byte by byte, each byte of every row contiguous (bytes, len(slots)) in packed
    # order: a lookup per byte then reads a contiguous index, not a column 48 bytes apart.
    n = len(slots)
    by_word = np.ascontiguousarray(words[:, slots]).view(np.uint8).reshape(width, n, 8)
    codes = by_word.transpose(0, 2, 1).reshape(width * 8, n)
    out = np.zeros(n, dtype=np.float32)
    for byte, table in enumerate(tables[: -(-len(query) // 8)]):  # padding bytes add nothing
        out += table[codes[byte]]
    return out


def floor(scored: np.ndarray, exact: np.ndarray, k: int, sigmas: float = WIDEN_SIGMAS) -> float | None:
    """The lowest estimate a row not yet scored may have and still be among the ``k`` best, given
    rows already scored (their estimates ``scored`` and exact cosines ``exact``): the exact cosines
    are fitted as a line of the estimates (least squares, in closed form: ``np.polyfit`` took a
    third of a millisecond a query), and a row stays in when the line plus ``sigmas`` times the
    fit's error reaches the k-th best exact cosine. None when there is nothing to judge by (too few
    rows, no spread, a line that does not rise): then every row stays in."""
    n = len(exact)
    if n < max(k, 3):
        return None
    x = np.asarray(scored, dtype=np.float64)
    y = np.asarray(exact, dtype=np.float64)
    sx, sy = float(x.sum()), float(y.sum())
    spread = float(x @ x) - sx * sx / n
    covariance = float(x @ y) - sx * sy / n
    if spread <= 1e-12 * max(1.0, float(x @ x)):
        return None
    slope = covariance / spread
    if not np.isfinite(slope) or slope <= 0:
        return None
    intercept = (sy - slope * sx) / n
    # the residuals' standard deviation, from the same sums (no array of residuals)
    error = max(0.0, float(y @ y) - sy * sy / n - slope * covariance) ** 0.5 / n**0.5
    kth = float(np.partition(y, n - k)[n - k])
    return (kth - intercept - sigmas * error) / slope


def beyond(scored: np.ndarray, exact: np.ndarray, rest: np.ndarray, k: int, sigmas: float = WIDEN_SIGMAS) -> np.ndarray:
    """Which of the rows not yet scored (their estimates ``rest``) could still be among the ``k``
    best (``floor``). Where the estimates separate the rows, that is none of them; where they do
    not (near-duplicates, noise-like vectors), the list widens. Positions into ``rest``."""
    if not len(rest):
        return np.zeros(0, dtype=np.intp)
    lowest = floor(scored, exact, k, sigmas)
    if lowest is None:
        return np.arange(len(rest))  # nothing to judge by: every row stays in (the caller caps them)
    return np.flatnonzero(np.asarray(rest) >= lowest)
