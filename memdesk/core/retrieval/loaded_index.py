"""The loaded form of one vector index: ids and sign bits in slots, in memory.

Slots are ``BLOCK_ROWS`` wide a block, as the store keeps them (memdesk.core.retrieval.vector_codes):
a block written again overwrites its own slots, so a write costs one block, whatever the index's
size. A small index also holds its rows' float16 copies here (memdesk.core.retrieval.exact_rows).
The search over it is memdesk.core.retrieval.vector_index's.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from memdesk.core.retrieval import sign_scan, vector_codes
from memdesk.core.retrieval.exact_rows import ExactRows
from memdesk.core.retrieval.vector_codes import BLOCK_ROWS


@dataclass
class LoadedIndex:
    """Slots ``BLOCK_ROWS`` wide, block n in slots [n * BLOCK_ROWS, (n + 1) * BLOCK_ROWS): a rewritten
    block overwrites its own slots. Empty slots have id -1."""

    stamp: int = 0
    ids: np.ndarray = field(default_factory=lambda: np.full(0, -1, dtype=np.int64))
    # Sign bits, 64 a word, one row per word: (words, slots). Word by word the Hamming distance is
    # a few passes over contiguous memory, four times faster than a row-wise reduction.
    words: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.uint64))
    dimension: int = 0  # bits per vector (the dimension, rounded up to whole bytes)
    checked: bool = False  # compared with the store since this index object was made
    lock: threading.RLock = field(default_factory=threading.RLock)
    # A small index's float16 rows by slot (exact_rows), kept once a search has asked for them.
    exact: ExactRows = field(default_factory=ExactRows)
    # Each id's slot (-1: none), at ``slot_of[id - first]``: a conversation's million ids find
    # their cosines by one lookup each, where sorting and searching took longer than the search.
    first: int = 0
    slot_of: np.ndarray = field(default_factory=lambda: np.full(0, -1, dtype=np.int32))

    # Slots in use: up to the end of the last block placed. The arrays hold room beyond it for
    # blocks still to come; a search scans only these.
    used: int = 0
    # Slots in use without a row (the last block's tail, rows taken out), kept up to date by
    # ``place`` and ``drop`` (None: to be found again): a search must not count or mask a million
    # ids each time, nor a write make the next search do so.
    empty: np.ndarray | None = None

    @property
    def count(self) -> int:
        return self.used - len(self.empty_slots())

    def empty_slots(self) -> np.ndarray:
        if self.empty is None:
            self.empty = np.flatnonzero(self.ids[: self.used] < 0)
        return self.empty

    def slots(self, ids: np.ndarray) -> np.ndarray:
        """The slot of each id, -1 for ids this index does not hold."""
        ids = np.asarray(ids, dtype=np.int64)
        if not len(ids):
            return np.zeros(0, dtype=np.int64)
        at = ids - self.first
        if at.min() >= 0 and at.max() < len(self.slot_of):  # the usual case: one gather, no masks
            return self.slot_of[at].astype(np.int64)
        out = np.full(len(ids), -1, dtype=np.int64)
        inside = (at >= 0) & (at < len(self.slot_of))
        out[inside] = self.slot_of[at[inside]]
        return out

    def _map(self, ids: np.ndarray, slots: np.ndarray) -> None:
        """Record ``ids`` at ``slots`` in ``slot_of``, growing it (doubling) to cover them."""
        if not len(ids):
            return
        low, high = int(ids.min()), int(ids.max())
        if not len(self.slot_of) or low < self.first or high - self.first >= len(self.slot_of):
            first = low if not len(self.slot_of) else min(low, self.first)
            size = max(high - first + 1, self.first - first + len(self.slot_of), 2 * len(self.slot_of))
            grown = np.full(size, -1, dtype=np.int32)
            if len(self.slot_of):
                grown[self.first - first : self.first - first + len(self.slot_of)] = self.slot_of
            self.first, self.slot_of = first, grown
        self.slot_of[ids - self.first] = slots

    def _unmap(self, ids: np.ndarray, start: int, end: int) -> None:
        """Forget where ``ids`` were if that was within slots [start, end) (a rewritten row may
        already have its new place in a block placed before)."""
        at = ids[ids >= 0] - self.first
        at = at[(at >= 0) & (at < len(self.slot_of))]
        at = at[(self.slot_of[at] >= start) & (self.slot_of[at] < end)]
        self.slot_of[at] = -1

    def drop(self, gone: np.ndarray) -> None:
        """Take rows out (deleted behind memory's back)."""
        where = np.flatnonzero(np.isin(self.ids, gone))
        self.ids[where] = -1
        self.empty = None
        at = np.asarray(gone, dtype=np.int64) - self.first
        at = at[(at >= 0) & (at < len(self.slot_of))]
        self.slot_of[at] = -1

    def reserve(self, end: int, width: int) -> None:
        """Room for slots up to ``end`` (exactly: an index opened with all its blocks known)."""
        if end > len(self.ids) or self.words.shape[0] != width:
            self._grow(width, end)

    def _grow(self, width: int, size: int) -> None:
        ids = np.full(size, -1, dtype=np.int64)
        words = np.zeros((width, size), dtype=np.uint64)
        if self.words.shape[0] == width:
            ids[: len(self.ids)] = self.ids
            words[:, : self.words.shape[1]] = self.words
        else:
            self.empty = None  # another width: the rows held so far are gone
        self.ids, self.words = ids, words

    def place(self, block: vector_codes.Block) -> None:
        if len(block.ids) and not self.dimension:
            self.dimension = block.bits.shape[1] * 8
        width = -(-self.dimension // 64)
        start, end = block.number * BLOCK_ROWS, (block.number + 1) * BLOCK_ROWS
        if end > len(self.ids) or self.words.shape[0] != width:
            # appends: a quarter more at a time (a copy now and then, amortised constant, and never
            # twice the memory for one row more)
            self._grow(width, max(end, len(self.ids) + len(self.ids) // 4))
        self._unmap(self.ids[start:end], start, end)
        self.ids[start:end] = -1
        if len(block.ids) and block.bits.shape[1] * 8 == self.dimension:
            n = len(block.ids)
            self.ids[start : start + n] = block.ids
            self.words[:, start : start + n] = as_words(block.bits, width).T
            self._map(self.ids[start : start + n], np.arange(start, start + n, dtype=np.int32))
        if self.empty is not None:
            # the empty slots of this block's range are found again; those elsewhere stand, and
            # slots between the old end and this block (blocks never written) are empty too
            empty = self.empty
            self.empty = np.concatenate(
                [
                    empty[empty < start],
                    np.arange(self.used, start, dtype=np.intp),
                    start + np.flatnonzero(self.ids[start:end] < 0),
                    empty[empty >= end],
                ]
            )
        self.used = max(self.used, end)
        self.stamp = max(self.stamp, block.stamp)
        self.exact.placed(block.number)

    def query_words(self, query: np.ndarray) -> np.ndarray:
        return as_words(vector_codes.sign_bits(np.asarray(query)[None, :]), len(self.words))[0]

    def hamming(self, query: np.ndarray) -> np.ndarray:
        """Each slot in use's distance to ``query`` (empty slots: more than any row's)."""
        distance = sign_scan.hamming(self.words[:, : self.used], self.query_words(query))
        distance[self.empty_slots()] = self.dimension + 1
        return distance


def as_words(bits: np.ndarray, width: int) -> np.ndarray:
    """Packed bits (n, bytes) as (n, width) 64-bit words, zero-padded."""
    padded = np.zeros((len(bits), width * 8), dtype=np.uint8)
    padded[:, : bits.shape[1]] = bits
    return padded.view(np.uint64)
