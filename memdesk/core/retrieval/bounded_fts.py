"""The lexical leg with a bounded cost: FTS5 BM25 over at most about ``SCORED_ROWS`` rows a query.

FTS5 scores every row a query matches before ``ORDER BY bm25 LIMIT`` keeps the best: a query word
in one message of ten made a search at a million messages score 100,000 rows (0.6-2.5 s on the
busy 2-core machine), and automatic recall's deadline then cut that reply's memories. Here each query
word's document frequency is counted first, which only walks its posting list up to
``SCORED_ROWS`` (under a millisecond); then

* when the words together match at most ``SCORED_ROWS`` rows, the query runs as it always did;
* otherwise the rarest words that together match at most ``SCORED_ROWS`` rows choose the candidate
  rows, and those get their score under the whole query (exactly the score FTS5 gives them
  without any bound); rows that hold only the common words are scored among the newest
  ``SCORED_ROWS`` rows that hold them, and the best of both are kept.

So every row that contains one of the query's rarer words ranks exactly as before; what a bound
can leave out is an old row that holds only the common words, which in a million rows tells
little, and the dense leg still reaches it by meaning. The exact score of a candidate comes from
BM25 being a sum over the query's phrases (``bm25()`` in fts5_aux.c): matching ``(rare) AND (all)``
scores each candidate once for the rare phrases and once for all of them, and the rare phrases' own
score, from a second small query, is taken away again. What stays in proportion to the store is
FTS5's own count of each phrase's rows for its IDF, once per query: a walk of the posting list
(about 10 ms for a word in 100,000 rows), not a score per row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Rows BM25 scores per query, at most (about twice over, counting the exact candidates' second
#: query). Measured at a million messages on the 2-core machine: 5-7 µs a scored row at load 12,
#: 30-40 µs at load 15, against 0.1 µs a posting counted; with 3,000 a common word's search took
#: 130-340 ms at load 15, with 1,000 65-95 ms. At least every depth asked of it (600 parts).
SCORED_ROWS = 1000

Query = Callable[[str, Sequence], list]


@dataclass(frozen=True)
class FtsIndex:
    """An FTS5 table and how its rows are narrowed to one agent's: ``join`` (SQL after ``FROM
    table f``) and ``agent`` (the column holding the row's agent). ``columns``: what each result
    row carries after its rowid and score."""

    table: str
    agent: str
    join: str = ""
    columns: str = ""

    def scored(self, extra: str = "", *, limit: bool = True) -> str:
        """The agent's matching rows with their score (higher is better), best first."""
        more = f", {self.columns}" if self.columns else ""
        sql = (
            f"SELECT f.rowid, -bm25({self.table}){more} FROM {self.table} f {self.join}"
            f" WHERE {self.table} MATCH ? AND {self.agent} = ?{extra}"
        )
        return sql + f" ORDER BY bm25({self.table}) LIMIT ?" if limit else sql

    @property
    def counted(self) -> str:
        """How many rows (of any agent) a phrase matches, counted up to a bound."""
        return f"SELECT COUNT(*) FROM (SELECT rowid FROM {self.table} WHERE {self.table} MATCH ? LIMIT ?)"

    @property
    def window_start(self) -> str:
        """The rowid from which the newest rows hold a given number of matches."""
        return f"SELECT rowid FROM {self.table} WHERE {self.table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?"


def any_of(phrases: Sequence[str]) -> str:
    return " OR ".join(phrases)


def best_matches(query: Query, index: FtsIndex, phrases: Sequence[str], agent_id: int, limit: int) -> list[tuple]:
    """The agent's ``limit`` best rows for the phrases OR-ed together (each already quoted for
    FTS5), as (rowid, score, *columns), best first, scoring at most about ``SCORED_ROWS`` rows
    twice over. ``query(sql, params)`` runs a statement on the index's database."""
    phrases = list(dict.fromkeys(phrases))
    if not phrases:
        return []
    counts = {p: int(query(index.counted, (p, SCORED_ROWS + 1))[0][0]) for p in phrases}
    rare: list[str] = []
    total = 0
    for phrase in sorted(phrases, key=counts.__getitem__):
        if total + counts[phrase] > SCORED_ROWS:
            break
        rare.append(phrase)
        total += counts[phrase]
    every = any_of(phrases)
    if len(rare) == len(phrases):  # few rows match: the query as it always ran
        return [tuple(r) for r in query(index.scored(), (every, agent_id, limit))]
    found: dict[int, tuple] = {}
    if rare:
        twice = {r[0]: r for r in query(index.scored(limit=False), (f"({any_of(rare)}) AND ({every})", agent_id))}
        for rowid, score, *_ in query(index.scored(limit=False), (any_of(rare), agent_id)):
            if rowid in twice:
                found[rowid] = (rowid, twice[rowid][1] - score, *twice[rowid][2:])
    common = any_of([p for p in phrases if p not in rare])
    start = query(index.window_start, (common, SCORED_ROWS - 1))
    if start:
        newest = query(index.scored(" AND f.rowid >= ?"), (every, agent_id, start[0][0], limit))
    else:  # the common words match fewer rows than the bound, all of them
        newest = query(index.scored(), (every, agent_id, limit))
    for row in newest:
        found.setdefault(row[0], tuple(row))
    return sorted(found.values(), key=lambda r: (-r[1], r[0]))[:limit]
