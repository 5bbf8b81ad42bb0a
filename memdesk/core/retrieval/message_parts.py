"""Long messages searched by their parts: a lexical index of message parts, kept in memory.

A message of thousands of characters (pasted code, a plan) ranks badly as a whole: BM25's length
normalisation dilutes the one paragraph that answers, and the embedder reads only its beginning.
Here every message is cut into parts of about PART_CHARS characters along its lines and sentences
(a short message is one part), and the parts get their own FTS5 index, with the same tokenizer as
the store's ``messages_fts``; a message's lexical score is its best part's, and that part is what
automatic recall shows.

The index is a cache, not data: it lives in a private in-memory SQLite database (nothing is
written to the store, so no migration, and a rolled-back transaction of the store cannot leave
it out of step), is filled on first use per agent, extended as messages arrive, and rebuilt when
the agent's messages change otherwise (an edit, a deletion: ``forget`` must not leave text here),
which a checksum of every message's text shows.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from memdesk.core.retrieval.bounded_fts import FtsIndex, best_matches

#: Target size of a part. Measured on BEAM's development chats (docs/evaluation.md).
PART_CHARS = 800
#: A message at most this long is one part.
WHOLE_CHARS = 1000
#: Parts asked of the index per query (a message has several, so more than messages are).
PART_DEPTH = 600
#: The parts' index, each row with its message and span.
PARTS = FtsIndex("parts", "f.agent_id", columns="f.message_id, f.start, f.end")
_BREAK = re.compile(r"\n\s*\n|\n|(?<=[.!?])\s+")


@dataclass(frozen=True)
class PartHit:
    score: float  # the best part's BM25 (higher is better)
    start: int  # its span in the message's search text
    end: int
    parts: int  # how many parts the message has


def checksum(text: str | None) -> int:
    """A message's text as a number, summed over an agent's messages to tell whether any changed
    (SQL function ``memdesk_checksum``): a rewrite to the same length must not go unseen."""
    return zlib.crc32((text or "").encode("utf-8"))


def split_parts(text: str, size: int = PART_CHARS, whole: int = WHOLE_CHARS) -> list[tuple[int, int]]:
    """Spans of ``text`` in reading order, each about ``size`` characters, cut at paragraph, line
    or sentence ends where possible (a run without any is cut at ``size``). They cover the text."""
    if len(text) <= whole:
        return [(0, len(text))]
    cuts = [m.end() for m in _BREAK.finditer(text)] + [len(text)]
    spans: list[tuple[int, int]] = []
    start = 0
    last_cut = 0
    for cut in cuts:
        while cut - start > size and last_cut <= start:  # no break inside: cut hard
            spans.append((start, start + size))
            start += size
        if cut - start > size:
            spans.append((start, last_cut))
            start = last_cut
            while cut - start > size:
                spans.append((start, start + size))
                start += size
        last_cut = cut
    if start < len(text):
        if spans and len(text) - start < size // 4:  # a short tail joins the part before it
            spans[-1] = (spans[-1][0], len(text))
        else:
            spans.append((start, len(text)))
    return spans


class PartIndex:
    """Parts of one store's messages, per agent, in a private in-memory FTS5 table."""

    def __init__(self, on_indexed: Callable[[int, list[tuple[int, str]], bool], None] | None = None) -> None:
        """``on_indexed(agent_id, rows, appended)``: told each (id, search text) row indexed, in
        order, and whether they were added to the agent's (else they replace them), under the
        index's lock: what keeps another copy of the texts stays in step."""
        self._on_indexed = on_indexed
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE parts USING fts5(text, agent_id UNINDEXED, message_id UNINDEXED, start UNINDEXED,"
            " end UNINDEXED,"
            " tokenize='porter unicode61 remove_diacritics 2')"
        )
        self._state: dict[int, tuple] = {}  # agent -> (messages, newest id, total length) indexed
        # agent -> message id -> its parts, for messages of more than one: asking the table read
        # every row of it (5 s at a million parts; the column is not indexed)
        self._counts: dict[int, dict[int, int]] = {}
        self._lock = threading.Lock()

    def refresh(self, agent_id: int, state: tuple, rows_after) -> None:
        """Bring the agent's parts up to ``state`` ((count, newest id, sum of ``checksum``) of its
        searchable messages). ``rows_after(id)`` gives (id, search_text) of the messages newer
        than ``id`` (all of them for 0): only those are added when nothing older changed."""
        with self._lock:
            known = self._state.get(agent_id)
            if known == state:
                return
            # What is indexed already, when the agent's messages only grew since.
            base = known if known is not None and known[1] is not None and state[1] is not None else None
            if base is not None and state[1] <= base[1]:
                base = None
            rows = list(rows_after(base[1] if base is not None else 0))
            if base is not None and (base[0] + len(rows), base[2] + sum(checksum(t) for _, t in rows)) != (
                state[0],
                state[2],
            ):
                base = None  # an older message changed too
                rows = list(rows_after(0))
            appended = base is not None
            parts = [(message_id, text, split_parts(text)) for message_id, text in rows]
            with self._db:
                if not appended:
                    self._db.execute("DELETE FROM parts WHERE agent_id = ?", (agent_id,))
                self._db.executemany(
                    "INSERT INTO parts(text, agent_id, message_id, start, end) VALUES (?, ?, ?, ?, ?)",
                    [(text[a:b], agent_id, message_id, a, b) for message_id, text, spans in parts for a, b in spans],
                )
            if self._on_indexed is not None:
                self._on_indexed(agent_id, rows, appended)
            counts = self._counts.get(agent_id, {}) if appended else {}
            counts.update((message_id, len(spans)) for message_id, _, spans in parts if len(spans) > 1)
            self._counts[agent_id] = counts
            self._state[agent_id] = state

    def best_parts(self, agent_id: int, phrases: list[str]) -> dict[int, PartHit]:
        """Message id -> its best-scoring part for FTS5 phrases OR-ed together, bounded as the
        store's own indexes are (memdesk.core.retrieval.bounded_fts)."""
        with self._lock:
            rows = best_matches(
                lambda sql, params: self._db.execute(sql, params).fetchall(), PARTS, phrases, agent_id, PART_DEPTH
            )
            found: dict[int, PartHit] = {}
            for _, score, message_id, start, end in rows:
                if message_id not in found:
                    found[int(message_id)] = PartHit(float(score), int(start), int(end), 0)
            counts = self._counts.get(agent_id, {})
            return {m: PartHit(h.score, h.start, h.end, counts.get(m, 1)) for m, h in found.items()}

    def close(self) -> None:
        self._db.close()
