"""conversation_search ranking: exact substring matches first, then BM25 + vector fusion over turns.

Retrieval only ranks: it returns message ids with scores, and recall memory
(desktop.core.memory.recall) turns them into messages. Messages get vectors lazily: recall embeds
the pending ones before it asks for a ranking, so the chat step never waits for the embedder.

Weights were tuned on LoCoMo conv-26/30/41 and checked on conv-42/43 (see the eval command).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone

import numpy as np

from desktop.core.clock import parse_iso
from desktop.core.embedding import Embedder
from desktop.core.retrieval import fusion
from desktop.core.retrieval.graph_expansion import expansion_scores
from desktop.core.retrieval.message_parts import PartIndex, checksum
from desktop.core.retrieval.query import contains_casefold, fts_query, mentioned_dates, mentioned_names, without_words
from desktop.core.retrieval.vector_index import VectorIndex
from desktop.core.storage import Database

DENSE_WEIGHT = 0.8
#: Answers spread over a question and its reply; on LoCoMo at 8192 (evidence in the prompt), 0.4
#: gave conv-26 0.801 and conv-42 0.727, 0.6 gave 0.832 and 0.750, 0.8 and 1.0 no better overall.
NEIGHBOUR_ALPHA = 0.6
#: Weight of knowledge-graph expansion when it is on (see graph_expansion and the LoCoMo eval).
GRAPH_WEIGHT = 0.5
#: Added to the messages of the one speaker a query names ("what did Caroline research?"). The
#: name itself is taken out of the query: in a chat it is mostly the *other* speaker who writes it
#: ("Thanks, Caroline!"), so as a search word it pulls up the wrong half of the conversation.
#: On LoCoMo at 8192 this put the evidence in the prompt for 0.801 -> 0.888 of conv-26's questions.
SPEAKER_BOOST = 0.1
#: A message with no relevance of its own, lifted by a neighbour, is a result only above this share
#: of the best score.
NEIGHBOUR_ONLY_FLOOR = 0.25
#: Added to messages written on a date the query names ("what did I say on 31 July, 2023?"):
#: tuned on LoCoMo's tuning conversations, where such questions otherwise miss their day.
DATE_BOOST = 0.5
#: Message times are stored in UTC and the query's dates are the user's: a day either side.
DATE_SLACK = timedelta(days=1)
#: Turns further apart than this are not one conversation, so they do not lend each other score.
SESSION_GAP_SECONDS = 6 * 3600
SEARCH_DEPTH = 100
LEXICAL_DEPTH = 200
#: Rankings kept per ranker (a query is ranked once and paged through).
CACHED_RANKINGS = 64


@dataclass(frozen=True)
class MessageRank:
    id: int
    score: float
    exact: bool  # the query occurs in the message verbatim (case-insensitive)
    part: tuple[int, int] | None = None  # of a long message, the span of its search text that matched best


@dataclass
class _Timeline:
    token: tuple
    ids: np.ndarray
    position: dict[int, int]
    authors: np.ndarray  # who wrote each item: its author, or the name of its role's speaker ("" unknown)
    same_session: np.ndarray  # item i continues item i-1's conversation
    times: np.ndarray  # POSIX seconds of each item


class MessageRanker:
    """Ranks one store's messages. Holds that store's caches (session timelines, recent rankings),
    so it is built once per store by the composition root and passed in."""

    def __init__(
        self, db: Database, embedder: Embedder | None, vectors: VectorIndex | None = None, *, user_name: Callable[[], str] = lambda: "",
        by_parts: bool = True,
    ) -> None:
        """``user_name``: the person's name (a setting, read at each search). With it and the
        agent's own name, app messages, which have no author, still have a speaker. ``by_parts``:
        the lexical leg scores a long message by its best part (desktop.core.retrieval.message_parts)."""
        self._db = db
        self.by_parts = by_parts
        self._parts = PartIndex()
        self._parts_token: dict[int, tuple] = {}
        self._user_name = user_name
        self._embedder = embedder
        self._vectors = vectors or VectorIndex(db)
        self._timelines: dict[int, _Timeline] = {}
        self._rankings: OrderedDict[tuple, list[MessageRank]] = OrderedDict()
        self._lock = threading.Lock()
        db.create_function("memdesk_contains", 2, contains_casefold)
        db.create_function("memdesk_checksum", 1, checksum)

    def _timeline(self, agent_id: int) -> _Timeline:
        db = self._db
        user = (self._user_name() or "").strip()
        agent = db.scalar("SELECT name FROM agents WHERE id = ?", (agent_id,)) or ""
        token = (*db.query_one("SELECT COUNT(*), MAX(id) FROM messages WHERE agent_id = ?", (agent_id,)), user, agent)
        with self._lock:
            cached = self._timelines.get(agent_id)
        if cached is not None and cached.token == token:
            return cached
        rows = db.query(
            "SELECT id, created_at, author, role FROM messages WHERE agent_id = ? AND search_text != '' ORDER BY id", (agent_id,)
        )
        speaker = {"user": user, "assistant": agent}
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        times = np.array([parse_iso(r[1]).timestamp() for r in rows], dtype=np.float64)
        same = np.zeros(len(rows), dtype=bool)
        same[1:] = np.abs(np.diff(times)) <= SESSION_GAP_SECONDS
        authors = np.array([r[2] or speaker.get(r[3], "") for r in rows], dtype=object)
        timeline = _Timeline(token, ids, {int(i): n for n, i in enumerate(ids)}, authors, same, times)
        with self._lock:
            self._timelines[agent_id] = timeline
        return timeline

    def _part_scores(self, agent_id: int, match: str, token: tuple) -> dict:
        """``token``: the timeline's (count, newest id, ...) with the vectors' generation, which
        moves whenever a message's text is rewritten (its vector is dropped): while it stands
        still, the parts are current without summing a checksum over every message."""
        db = self._db
        with self._lock:
            current = self._parts_token.get(agent_id) == token
        if not current:
            state = tuple(db.query_one(
                "SELECT COUNT(*), MAX(id), TOTAL(memdesk_checksum(search_text)) FROM messages WHERE agent_id = ? AND search_text != ''",
                (agent_id,),
            ))
            self._parts.refresh(agent_id, state, lambda after: db.query(
                "SELECT id, search_text FROM messages WHERE agent_id = ? AND search_text != '' AND id > ? ORDER BY id", (agent_id, after)
            ))
            with self._lock:
                self._parts_token[agent_id] = token
        return self._parts.best_parts(agent_id, match)

    def rank(
        self, agent_id: int, query: str, *, dense: bool = True, graph_weight: float = 0.0, before_id: int | None = None,
        by_parts: bool | None = None,
    ) -> list[MessageRank]:
        """Every result of the query, best first; computed once per query and store state. The
        dense leg uses the vectors present: recall memory embeds pending messages first.
        ``graph_weight`` > 0 adds knowledge-graph expansion (desktop.core.retrieval.graph_expansion).
        ``before_id`` ranks only older messages (automatic recall searches what is out of the
        context window: the newest messages, the query itself among them, would set the scale)."""
        query = query.strip()
        if not query:
            return []
        db = self._db
        dense = dense and self._embedder is not None
        timeline = self._timeline(agent_id)
        if before_id is not None:
            timeline = _older_than(timeline, before_id)
        by_parts = self.by_parts if by_parts is None else by_parts
        key = (agent_id, query, dense, timeline.token, self._vectors.generation("messages", agent_id), graph_weight, by_parts)
        if graph_weight > 0:  # the graph grows in the background and users edit it from another connection
            key += (db.scalar("SELECT MAX(id) FROM graph_mentions WHERE agent_id = ?", (agent_id,)), db.scalar("PRAGMA data_version"))
        with self._lock:
            if key in self._rankings:
                self._rankings.move_to_end(key)
                return self._rankings[key]
        n = len(timeline.ids)
        names = mentioned_names(query, sorted({a for a in timeline.authors if a}))
        searched = without_words(query, sorted(names)) or query  # a speaker's name is not a search word
        lexical = np.zeros(n)
        match = fts_query(searched)
        spans: dict[int, tuple[int, int]] = {}
        if match and by_parts:
            full = self._timeline(agent_id).token  # all the agent's messages, whatever before_id cuts
            for message_id, hit in self._part_scores(agent_id, match, (*full, self._vectors.generation("messages", agent_id))).items():
                if message_id in timeline.position:
                    lexical[timeline.position[message_id]] = hit.score
                    if hit.parts > 1:
                        spans[message_id] = (hit.start, hit.end)
        elif match:
            rows = db.query(
                "SELECT f.rowid, -bm25(messages_fts) FROM messages_fts f JOIN messages m ON m.id = f.rowid"
                " WHERE messages_fts MATCH ? AND m.agent_id = ? ORDER BY bm25(messages_fts) LIMIT ?",
                (match, agent_id, LEXICAL_DEPTH),
            )
            for message_id, score in rows:
                if message_id in timeline.position:
                    lexical[timeline.position[message_id]] = score
        scores = fusion.scale_by_max(lexical)
        lift = np.zeros(n)  # what each score owes to its neighbours
        if dense and n:
            cosine = np.zeros(n)
            for message_id, value in self._vectors.all_scores("messages", agent_id, self._embedder.embed([searched])[0]).items():
                if message_id in timeline.position:
                    cosine[timeline.position[message_id]] = value
            scores = fusion.weighted_sum(scores, fusion.centre_cosine(cosine), DENSE_WEIGHT)
            lifted = fusion.neighbour_boost(scores, timeline.same_session, NEIGHBOUR_ALPHA)
            lift, scores = lifted - scores, lifted
        if graph_weight > 0 and n:
            expansion = expansion_scores(db, agent_id, query, timeline.position, n)
            if expansion is not None:
                scores = scores + graph_weight * expansion
        dates = mentioned_dates(query)
        if dates and n:
            scores = scores + DATE_BOOST * _on_dates(timeline.times, dates)
        if len(names) == 1:
            scores = scores + SPEAKER_BOOST * ((timeline.authors == next(iter(names))) & (scores > 0))  # reorders matches, adds none
        exact_ids = {r[0] for r in db.query(
            "SELECT id FROM messages WHERE agent_id = ? AND search_text != '' AND memdesk_contains(search_text, ?)", (agent_id, query)
        ) if r[0] in timeline.position}
        exact = np.array([int(i) in exact_ids for i in timeline.ids], dtype=bool)
        order = fusion.rank(scores, first=exact)
        # Every exact match stays reachable by paging; beyond them, the best SEARCH_DEPTH that score.
        # A message found only through its neighbour is kept when that made it a strong result
        # ("I've had them for three years" after "how long have you had turtles?"), not when it
        # merely crossed zero ("Thanks" after the best match).
        floor = NEIGHBOUR_ONLY_FLOOR * float(scores.max()) if n else 0.0
        keep = [
            p for k, p in enumerate(order)
            if exact[p] or (k < len(exact_ids) + SEARCH_DEPTH and scores[p] > 0 and (scores[p] - lift[p] > 0 or scores[p] >= floor))
        ]
        result = [MessageRank(int(timeline.ids[p]), float(scores[p]), bool(exact[p]), spans.get(int(timeline.ids[p]))) for p in keep]
        with self._lock:
            self._rankings[key] = result
            while len(self._rankings) > CACHED_RANKINGS:
                self._rankings.popitem(last=False)
        return result


def _older_than(timeline: _Timeline, before_id: int) -> _Timeline:
    """The part of a timeline before a message id (ids are in ascending order: a prefix)."""
    n = int(np.searchsorted(timeline.ids, before_id))
    ids = timeline.ids[:n]
    return _Timeline(
        (*timeline.token, before_id), ids, {int(i): k for k, i in enumerate(ids)}, timeline.authors[:n], timeline.same_session[:n],
        timeline.times[:n],
    )


def _on_dates(times: np.ndarray, dates: list[tuple[date, date]]) -> np.ndarray:
    """1.0 for items written within one of the inclusive day ranges (with DATE_SLACK), else 0."""
    hit = np.zeros(times.size, dtype=bool)
    for first, last in dates:
        start = datetime.combine(first, time.min, timezone.utc) - DATE_SLACK
        end = datetime.combine(last, time.min, timezone.utc) + timedelta(days=1) + DATE_SLACK
        hit |= (times >= start.timestamp()) & (times < end.timestamp())
    return hit.astype(np.float64)
