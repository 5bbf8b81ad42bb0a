"""conversation_search ranking: exact substring matches first, then BM25 + vector fusion over turns.

Retrieval only ranks: it returns message ids with scores, and recall memory
(memdesk.core.memory.recall) turns them into messages. Messages get vectors lazily: recall embeds
the pending ones before it asks for a ranking, so the chat step never waits for the embedder.

Weights were tuned on LoCoMo conv-26/30/41 and checked on conv-42/43 (see the eval command).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from memdesk.core.base.settings_table import Settings
from memdesk.core.embedding import Embedder
from memdesk.core.retrieval import features, fusion
from memdesk.core.retrieval.asker import about_oneself, asker_boost
from memdesk.core.retrieval.bounded_fts import FtsIndex, best_matches
from memdesk.core.retrieval.folded_texts import FoldedTexts
from memdesk.core.retrieval.graph_expansion import MentionedMessages, expansion_scores
from memdesk.core.retrieval.learned import LearnedScorer
from memdesk.core.retrieval.message_parts import PartIndex, checksum
from memdesk.core.retrieval.nothing_judge import DEPTH as JUDGED  # the hits the judge reads
from memdesk.core.retrieval.query import (
    contains_casefold,
    fts_phrases,
    inner_words,
    meaning_text,
    mentioned_dates,
    mentioned_names,
)
from memdesk.core.retrieval.timeline import Timelines, older_than, on_dates
from memdesk.core.retrieval.vector_index import VectorIndex
from memdesk.core.retrieval.versions import NEWER_FIRST_DEPTH, newer_values_first
from memdesk.core.storage import Database

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
SEARCH_DEPTH = 100
LEXICAL_DEPTH = 200
#: Rankings kept per ranker (a query is ranked once and paged through).
CACHED_RANKINGS = 64
#: Messages whose texts are each compared with the query for verbatim matches; above, the word
#: index proposes which (measured: reading 100,000 texts takes about 170 ms on a 2-core machine).
VERBATIM_SCAN_MAX = 20_000
#: Texts the word index may propose for that comparison, the newest first (at a million messages
#: on the loaded 2-core machine: 30-70 ms where every proposal took 0.4-12 s).
VERBATIM_CANDIDATES = 1000
#: Conversations up to this many messages score a long message by its best part (an in-memory index
#: of every message's parts, built at the first search: 0.9 s for 10,000 messages on a busy 2-core
#: machine). Longer ones use the store's whole-message index: building parts for a million messages
#: would take minutes and gigabytes (issue 20's sizes).
PARTS_MAX = 20_000

#: The index first, then each hit's row. CROSS JOIN fixes that order: SQLite 3.51 (SQLCipher's)
#: otherwise starts from the agent's messages and runs the full-text match once per message
#: (measured: 0.76 s instead of 0.013 s for 1,000 messages).
LEXICAL_INDEX = FtsIndex("messages_fts", "m.agent_id", "CROSS JOIN messages m ON m.id = f.rowid")


def graph_weight(settings: Settings) -> float:
    """The weight of knowledge-graph expansion the settings ask for (the graph_search_expansion setting)."""
    return GRAPH_WEIGHT if settings.graph_search_expansion else 0.0


@dataclass(frozen=True)
class MessageRank:
    id: int
    score: float
    exact: bool  # the query occurs in the message verbatim (case-insensitive)
    part: tuple[int, int] | None = None  # of a long message, the span of its search text that matched best
    # what the learned scorer read of it (memdesk.core.retrieval.features), when one ranked
    features: np.ndarray | None = field(default=None, compare=False, repr=False)


class MessageRanker:
    """Ranks one store's messages. Holds that store's caches (session timelines, recent rankings),
    so it is built once per store by the composition root and passed in."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder | None,
        vectors: VectorIndex | None = None,
        *,
        user_name: Callable[[], str] = lambda: "",
        by_parts: bool = True,
        scorer: LearnedScorer | None = None,
    ) -> None:
        """``user_name``: the person's name (a setting, read at each search). With it and the
        agent's own name, app messages, which have no author, still have a speaker. ``by_parts``:
        the lexical leg scores a long message by its best part (memdesk.core.retrieval.message_parts).
        ``scorer``: a learned model ranks a wider pool of candidates by the legs' features
        (memdesk.core.retrieval.learned); without one, the hand fusion ranks."""
        self._db = db
        self.by_parts = by_parts
        self.scorer = scorer
        self._folded = FoldedTexts()
        self._parts = PartIndex(on_indexed=self._folded.update)  # keeps the folded texts in step
        self._parts_token: dict[int, tuple] = {}
        self._user_name = user_name
        self._embedder = embedder
        self._vectors = vectors or VectorIndex(db)
        self._timelines = Timelines(db, user_name)
        self._rankings: OrderedDict[tuple, list[MessageRank]] = OrderedDict()
        self._mentioned = MentionedMessages(db)
        self._lock = threading.Lock()
        db.create_function("memdesk_contains", 2, contains_casefold)
        db.create_function("memdesk_checksum", 1, checksum)

    def warm(self, agent_id: int, *, graph: bool = False) -> None:
        """Read the agent's timeline now (a million messages take seconds), and build its parts
        index (a second for 10,000 messages), not at the first search, where automatic recall's
        deadline would cut it short. ``graph``: searches follow the knowledge graph, so count the
        messages that mention anything too (seconds at a million)."""
        timeline = self._timelines.get(agent_id)
        if graph:
            self._mentioned.count(agent_id, self._db.scalar("SELECT MAX(id) FROM graph_mentions"))
        if self.by_parts and len(timeline.ids) <= PARTS_MAX:
            self._current_parts(agent_id, (*timeline.token, self._vectors.generation("messages", agent_id)))

    def speakers(self, agent_id: int, message_ids: list[int]) -> tuple[frozenset[str], list[str]]:
        """Everyone who speaks in the agent's conversation, and who said each of these messages
        ("" when unknown): app messages have no author, their role's speaker is the name."""
        timeline = self._timelines.get(agent_id)
        where = timeline.index_of(message_ids)
        return timeline.speakers, [str(timeline.authors[p]) if p >= 0 else "" for p in where]

    def _verbatim(self, agent_id: int, query: str, size: int, parts_token: tuple | None = None) -> list[int]:
        """Ids of the messages that contain ``query`` in any case (casefold: every script). When
        the parts index holds the conversation (``parts_token``: its token), its casefolded copy of
        the texts answers (folded_texts). Otherwise each text is compared, up to
        ``VERBATIM_SCAN_MAX`` messages; in a longer conversation, reading every text takes longer
        than automatic recall may wait, so the word index proposes the texts that hold the query's
        inner words (see query.inner_words) and those are compared. (A word the FTS tokenizer
        folds differently from casefold, "Straße" for "strasse", then goes unmatched when it is an
        inner word: the price of staying within the deadline.) At most the newest
        ``VERBATIM_CANDIDATES`` texts holding those words are compared: common words ("x did you
        see y") proposed 7,556 of a million messages, 0.4 s of reading, and their exact matches,
        if any, are rare and old."""
        if parts_token is not None:
            self._current_parts(agent_id, parts_token)
            found = self._folded.containing(agent_id, query)
            if found is not None:
                return found
        words = inner_words(query) if size > VERBATIM_SCAN_MAX else []
        if words:
            # A subquery, not a join: joined, SQLite walks the agent's messages and asks FTS about each.
            sql = (
                "SELECT id FROM messages WHERE id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?"
                " ORDER BY rowid DESC LIMIT ?)"
                " AND agent_id = ? AND search_text != '' AND memdesk_contains(search_text, ?)"
            )
            params: tuple = (
                " AND ".join('"' + w.replace('"', '""') + '"' for w in words),
                VERBATIM_CANDIDATES,
                agent_id,
                query,
            )
        else:
            sql = (
                "SELECT id FROM messages WHERE agent_id = ? AND search_text != '' AND memdesk_contains(search_text, ?)"
            )
            params = (agent_id, query)
        return [r[0] for r in self._db.query(sql, params)]

    def _part_scores(self, agent_id: int, phrases: list[str], token: tuple) -> dict:
        self._current_parts(agent_id, token)
        return self._parts.best_parts(agent_id, phrases)

    def _current_parts(self, agent_id: int, token: tuple) -> None:
        """``token``: the timeline's (count, newest id, ...) with the vectors' generation, which
        moves whenever a message's text is rewritten (its vector is dropped): while it stands
        still, the parts are current without summing a checksum over every message."""
        db = self._db
        with self._lock:
            current = self._parts_token.get(agent_id) == token
        if not current:
            state = tuple(
                db.query_one(
                    "SELECT COUNT(*), MAX(id), TOTAL(memdesk_checksum(search_text)) FROM messages WHERE agent_id = ?"
                    " AND search_text != ''",
                    (agent_id,),
                )
            )
            self._parts.refresh(
                agent_id,
                state,
                lambda after: db.query(
                    "SELECT id, search_text FROM messages WHERE agent_id = ? AND search_text != '' AND id > ?"
                    " ORDER BY id",
                    (agent_id, after),
                ),
            )
            with self._lock:
                self._parts_token[agent_id] = token

    def rank(
        self,
        agent_id: int,
        query: str,
        *,
        dense: bool = True,
        graph_weight: float = 0.0,
        before_id: int | None = None,
        by_parts: bool | None = None,
    ) -> list[MessageRank]:
        """Every result of the query, best first; computed once per query and store state. The
        dense leg uses the vectors present: recall memory embeds pending messages first.
        ``graph_weight`` > 0 adds knowledge-graph expansion (memdesk.core.retrieval.graph_expansion).
        ``before_id`` ranks only older messages (automatic recall searches what is out of the
        context window: the newest messages, the query itself among them, would set the scale)."""
        query = query.strip()
        if not query:
            return []
        db = self._db
        embedder = self._embedder if dense else None
        dense = embedder is not None
        timeline = self._timelines.get(agent_id)
        if before_id is not None:
            timeline = older_than(timeline, before_id)
        by_parts = self.by_parts if by_parts is None else by_parts
        key: tuple[Any, ...] = (
            agent_id,
            query,
            dense,
            timeline.token,
            self._vectors.generation("messages", agent_id),
            graph_weight,
            by_parts,
            self.scorer.name if self.scorer is not None else None,
        )
        if graph_weight > 0:  # the graph grows in the background and users edit it from another connection
            # the newest mention of any agent: per agent, SQLite read every mention's index entry
            # (1.3 s at two million); another agent's mention costs a cache miss, nothing more
            key += (db.scalar("SELECT MAX(id) FROM graph_mentions"), db.scalar("PRAGMA data_version"))
        with self._lock:
            if key in self._rankings:
                self._rankings.move_to_end(key)
                return self._rankings[key]
        newest_mention = key[-2] if graph_weight > 0 else None
        legs, spans, parts = self._legs(agent_id, query, timeline, embedder, graph_weight, by_parts, newest_mention)
        if self.scorer is not None and self.scorer.ranks and timeline.ids.size:
            result = self._learned(self.scorer, query, legs, timeline, spans, parts)
        else:
            result = self._fused(legs, timeline, spans)
            if self.scorer is not None and result:  # the judge reads the best hits' features
                result = self._described(query, legs, timeline, parts, result)
        result = self._newer_values_first(query, result, timeline)
        with self._lock:
            self._rankings[key] = result
            while len(self._rankings) > CACHED_RANKINGS:
                self._rankings.popitem(last=False)
        return result

    def _newer_values_first(self, query: str, ranked: list[MessageRank], timeline) -> list[MessageRank]:
        """Of two values of what the query asks among the best hits, the newer first (versions.py);
        verbatim matches stay first."""
        head = [hit for hit in ranked[:NEWER_FIRST_DEPTH] if hit.exact == ranked[0].exact]
        if len(head) < 2:
            return ranked
        ids = [hit.id for hit in head]
        marks = ",".join("?" * len(ids))
        texts = dict(self._db.query(f"SELECT id, search_text FROM messages WHERE id IN ({marks})", ids))
        where = timeline.index_of(ids)
        said = [
            (texts.get(i, ""), timeline.authors[p], (timeline.times[p], i)) for i, p in zip(ids, where, strict=True)
        ]
        return [head[k] for k in newer_values_first(query, said)] + ranked[len(head) :]

    def _legs(
        self,
        agent_id: int,
        query: str,
        timeline,
        embedder,
        graph_weight: float,
        by_parts: bool,
        newest_mention: int | None,
    ) -> tuple[features.Legs, dict[int, tuple[int, int]], dict[int, int]]:
        """Every leg's scores over ``timeline`` and their hand fusion (``Legs.fused``); the matched
        span of each long message, and its number of parts."""
        db = self._db
        n = len(timeline.ids)
        names = mentioned_names(query, sorted(timeline.speakers))
        searched = meaning_text(query, timeline.speakers)  # the passages' dense leg embeds it too
        lexical = np.zeros(n)
        phrases = fts_phrases(searched)
        spans: dict[int, tuple[int, int]] = {}
        parts: dict[int, int] = {}  # of a message of several parts, how many
        parts_token = None  # the parts index's, when it holds this conversation
        if by_parts and len(self._timelines.get(agent_id).ids) <= PARTS_MAX:
            full = self._timelines.get(agent_id).token  # all the agent's messages, whatever before_id cuts
            parts_token = (*full, self._vectors.generation("messages", agent_id))
        if phrases and parts_token is not None:
            hits = self._part_scores(agent_id, phrases, parts_token)
            if hits:
                where = timeline.index_of(list(hits))
                for (message_id, hit), place in zip(hits.items(), where, strict=True):
                    if place >= 0:
                        lexical[place] = hit.score
                        if hit.parts > 1:
                            spans[message_id] = (hit.start, hit.end)
                            parts[message_id] = hit.parts
        elif phrases:
            rows = best_matches(db.query, LEXICAL_INDEX, phrases, agent_id, LEXICAL_DEPTH)
            if rows:
                where = timeline.index_of([r[0] for r in rows])
                found = where >= 0
                lexical[where[found]] = np.asarray([r[1] for r in rows], dtype=np.float64)[found]
        scores = fusion.scale_by_max(lexical)
        legs = features.Legs(
            lexical=scores, cosine=None, centred=None, lift=np.zeros(n), graph=None, dates=None, fused=scores,
            exact=np.zeros(n, dtype=bool), named=None, asker=None, about_oneself=False, has_date=False,
        )  # fmt: skip
        if embedder is not None and n:
            legs.cosine = self._vectors.cosines("messages", agent_id, embedder.embed([searched])[0], timeline.ids)
            legs.centred = fusion.centre_cosine(legs.cosine)
            scores = fusion.weighted_sum(scores, legs.centred, DENSE_WEIGHT)
            lifted = fusion.neighbour_boost(scores, timeline.same_session, NEIGHBOUR_ALPHA)
            legs.lift, scores = lifted - scores, lifted  # what each score owes to its neighbours
        if graph_weight > 0 and n:
            legs.graph = expansion_scores(
                db, agent_id, query, timeline.position, n, total=lambda: self._mentioned.count(agent_id, newest_mention)
            )
            if legs.graph is not None:
                scores = scores + graph_weight * legs.graph
        dates = mentioned_dates(query)
        legs.has_date = bool(dates)
        if dates and n:
            legs.dates = on_dates(timeline.times, dates)
            scores = scores + DATE_BOOST * legs.dates
        asker = (self._user_name() or "").strip()
        if len(names) == 1:
            legs.named = timeline.authors == next(iter(names))
            scores = scores + SPEAKER_BOOST * (legs.named & (scores > 0))  # reorders matches, adds none
        elif not names and n:
            legs.about_oneself = about_oneself(query)
            if legs.about_oneself:
                legs.asker = timeline.authors == asker
            scores = asker_boost(scores, timeline.authors, asker, query)
        exact = legs.exact
        where = timeline.index_of(self._verbatim(agent_id, query, n, parts_token))
        exact[where[where >= 0]] = True
        legs.fused = scores
        return legs, spans, parts

    def candidates(
        self, agent_id: int, query: str, *, graph_weight: float = 0.0, before_id: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What the learned scorer would rank for ``query``: the pool's message ids, their feature
        rows (memdesk.core.retrieval.features) and the hand fusion's scores of them (the training
        data of bench.train_ranker)."""
        timeline = self._timelines.get(agent_id)
        if before_id is not None:
            timeline = older_than(timeline, before_id)
        newest_mention = self._db.scalar("SELECT MAX(id) FROM graph_mentions") if graph_weight > 0 else None
        legs, _, parts = self._legs(
            agent_id, query.strip(), timeline, self._embedder, graph_weight, self.by_parts, newest_mention
        )
        pool, rows = self._features(query.strip(), legs, timeline, parts)
        return timeline.ids[pool], rows, legs.fused[pool]

    @staticmethod
    def _fused(legs: features.Legs, timeline, spans: dict) -> list[MessageRank]:
        """The hand fusion's ranking. Every exact match stays reachable by paging; beyond them, the
        best SEARCH_DEPTH that score. A message found only through its neighbour is kept when that
        made it a strong result ("I've had them for three years" after "how long have you had
        turtles?"), not when it merely crossed zero ("Thanks" after the best match). Only the few
        that can be kept are sorted: a million-message conversation is not put in order for a
        hundred results."""
        scores, exact, lift = legs.fused, legs.exact, legs.lift
        floor = NEIGHBOUR_ONLY_FLOOR * float(scores.max()) if scores.size else 0.0
        others = fusion.best(scores, ~exact & (scores > 0), SEARCH_DEPTH)
        others = others[(scores[others] - lift[others] > 0) | (scores[others] >= floor)]
        keep = np.concatenate([fusion.best(scores, exact, None), others])
        return [
            MessageRank(int(timeline.ids[p]), float(scores[p]), bool(exact[p]), spans.get(int(timeline.ids[p])))
            for p in keep
        ]

    def _described(
        self, query: str, legs: features.Legs, timeline, parts: dict, ranked: list[MessageRank]
    ) -> list[MessageRank]:
        """The hand fusion's ranking with the features of its best ``JUDGED`` hits (those the
        "nothing on that" judge reads; none of its features depends on the rest of the pool)."""
        best = ranked[:JUDGED]
        positions = timeline.index_of([hit.id for hit in best])
        order = np.argsort(positions)
        rows = np.zeros((len(best), len(features.FEATURES)))
        rows[order] = features.candidate_features(
            query,
            legs,
            positions[order],
            same_session=timeline.same_session,
            times=timeline.times,
            lengths=timeline.lengths,
            parts=np.asarray([parts.get(hit.id, 1) for hit in best])[order],
        )
        return [replace(hit, features=row) for hit, row in zip(best, rows, strict=True)] + ranked[JUDGED:]

    def _learned(
        self, scorer: LearnedScorer, query: str, legs: features.Legs, timeline, spans: dict, parts: dict
    ) -> list[MessageRank]:
        """The learned scorer's ranking of a wider pool (memdesk.core.retrieval.features): exact
        matches first, as in the hand fusion, then the best SEARCH_DEPTH of the rest by the model."""
        pool, rows = self._features(query, legs, timeline, parts)
        ids = timeline.ids[pool]
        learned = scorer.score(rows)
        exact = legs.exact[pool]
        order = np.lexsort((-pool, -learned))  # ties newest first
        keep = np.concatenate([order[exact[order]], order[~exact[order]][:SEARCH_DEPTH]])
        return [
            MessageRank(int(ids[k]), float(learned[k]), bool(exact[k]), spans.get(int(ids[k])), rows[k]) for k in keep
        ]

    def _features(self, query: str, legs: features.Legs, timeline, parts: dict) -> tuple[np.ndarray, np.ndarray]:
        pool = features.pool(legs)
        rows = features.candidate_features(
            query,
            legs,
            pool,
            same_session=timeline.same_session,
            times=timeline.times,
            lengths=timeline.lengths,
            parts=np.asarray([parts.get(int(i), 1) for i in timeline.ids[pool]]),
            vectors=lambda positions: features.unit_vectors(self._db, timeline.ids[positions]),
        )
        return pool, rows
