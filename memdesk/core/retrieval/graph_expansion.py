"""Query expansion through the knowledge graph: messages that mention an entity linked (by a
fact) to an entity the question names get a share of score.

"What did Caroline's support group do?" names "support group"; the graph links it to what was
said about it elsewhere, so turns that mention those linked entities come up even when they
share no word with the question. Each linked entity weighs by its rarity (idf over messages), so
a speaker linked to everything lends almost nothing.
"""

from __future__ import annotations

import math
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import Protocol

import numpy as np

from memdesk.core.graph.names import name_key
from memdesk.core.retrieval.changes import row_changes
from memdesk.core.storage import Database
from memdesk.core.text.words import split_words

MAX_NGRAM = 4
#: Linked entities per query entity, the rarest first: a hub's thousand neighbours are noise.
MAX_NEIGHBOURS = 40


def _candidate_keys(query: str) -> set[str]:
    words = split_words(query.casefold())
    keys: set[str] = set()
    for size in range(1, MAX_NGRAM + 1):
        for start in range(0, len(words) - size + 1):
            gram = " ".join(words[start : start + size])
            keys.add(name_key(gram))
            if gram.endswith("s") and len(gram) > 3:
                keys.add(name_key(gram[:-1]))  # "support groups" finds "support group"
    keys.discard("")
    return keys


def query_entities(db: Database, agent_id: int, query: str) -> set[int]:
    """Root ids of the entities whose name or alias the query contains."""
    keys = sorted(_candidate_keys(query))
    if not keys:
        return set()
    found: set[int] = set()
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        rows = db.query(
            "SELECT COALESCE(merged_into, id) FROM graph_entities WHERE agent_id = ? AND deleted = 0"
            f" AND key IN ({','.join('?' * len(chunk))})",
            (agent_id, *chunk),
        )
        found.update(int(r[0]) for r in rows)
    return found


def mentioned_messages(db: Database, agent_id: int) -> int:
    """How many of the agent's messages mention any entity (idf's document count). Reads every
    mention: callers keep it (MentionedMessages updates it from new mentions)."""
    return int(
        db.scalar(
            "SELECT COUNT(DISTINCT message_id) FROM graph_mentions WHERE agent_id = ? AND message_id IS NOT NULL",
            (agent_id,),
        )
    )


class MentionedMessages:
    """``mentioned_messages`` of each of one store's agents, kept: counting it reads every mention
    (3.5 s at two million), and the graph grows every turn."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._counts: dict[int, tuple[int, int, int]] = {}  # agent -> (mentions removed, newest mention, count)
        self._lock = threading.Lock()

    def count(self, agent_id: int, newest: int | None) -> int:
        """New mentions (``newest``: the newest mention's id) add the messages they are the first
        to mention; a mention removed or moved (the m015 triggers count them, cascades included)
        counts afresh."""
        db = self._db
        newest = int(newest or 0)
        state = row_changes(db, "graph_mentions", agent_id)[1]
        with self._lock:
            known = self._counts.get(agent_id)
        if known is not None and known[0] == state and known[1] <= newest:
            total = known[2]
            if known[1] < newest:
                total += int(
                    db.scalar(
                        "SELECT COUNT(DISTINCT m.message_id) FROM graph_mentions m WHERE m.id > ? AND m.id <= ?"
                        " AND m.agent_id = ?"
                        " AND m.message_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM graph_mentions o"
                        " WHERE o.message_id = m.message_id AND o.id <= ?)",
                        (known[1], newest, agent_id, known[1]),
                    )
                )
        else:
            # one statement, one snapshot: the count and the newest mention it includes
            total, newest = db.query_one(
                "SELECT COUNT(DISTINCT message_id), (SELECT MAX(id) FROM graph_mentions) FROM graph_mentions"
                " WHERE agent_id = ? AND message_id IS NOT NULL",
                (agent_id,),
            )
            total, newest = int(total), int(newest or 0)
        with self._lock:
            self._counts[agent_id] = (state, newest, total)
        return total


def _members(db: Database, roots) -> list[int]:
    """The entities whose root (``COALESCE(merged_into, id)``) may be one of ``roots``: the roots
    and what was merged into them. Lets the queries below start from the id indexes instead of
    reading every fact or entity to compute each one's root (seconds with a million mentions)."""
    roots = sorted(roots)
    found = set(roots)
    for start in range(0, len(roots), 500):
        chunk = roots[start : start + 500]
        found.update(
            r[0]
            for r in db.query(
                f"SELECT id FROM graph_entities WHERE merged_into IN ({','.join('?' * len(chunk))})", chunk
            )
        )
    return sorted(found)


class Positions(Protocol):
    """``message id -> index`` (a dict, or the ranker's timeline asked one id at a time)."""

    def get(self, message_id: int, /) -> int | None: ...


def expansion_scores(
    db: Database,
    agent_id: int,
    query: str,
    position: Positions,
    size: int,
    *,
    total: Callable[[], int] | None = None,
) -> np.ndarray | None:
    """Per message (aligned with ``position``: message id -> index), the summed idf of the linked
    entities it mentions, scaled to [0, 1]; None when the query names no entity with links.
    ``total``: ``mentioned_messages`` for the agent, when the caller keeps it."""
    seeds = query_entities(db, agent_id, query)
    if not seeds:
        return None
    messages = max(1, total() if total is not None else mentioned_messages(db, agent_id))
    marks = ",".join("?" * len(seeds))
    members = _members(db, seeds)
    near = ",".join("?" * len(members))
    rows = db.query(
        f"""
        SELECT DISTINCT COALESCE(s.merged_into, s.id), COALESCE(o.merged_into, o.id)
        FROM graph_facts f JOIN graph_entities s ON s.id = f.subject_id JOIN graph_entities o ON o.id = f.object_id
        WHERE (f.subject_id IN ({near}) OR f.object_id IN ({near}))
          AND f.agent_id = ? AND f.deleted = 0 AND s.deleted = 0 AND o.deleted = 0
          AND (COALESCE(s.merged_into, s.id) IN ({marks}) OR COALESCE(o.merged_into, o.id) IN ({marks}))
        """,
        (*members, *members, agent_id, *seeds, *seeds),
    )
    linked: dict[int, set[int]] = defaultdict(set)
    for subject, obj in rows:
        if subject in seeds and obj not in seeds:
            linked[int(subject)].add(int(obj))
        if obj in seeds and subject not in seeds:
            linked[int(obj)].add(int(subject))
    neighbours = {n for group in linked.values() for n in group}
    if not neighbours:
        return None
    marks = ",".join("?" * len(neighbours))
    members = _members(db, neighbours)
    frequency = {
        int(r[0]): int(r[1])
        for r in db.query(
            f"SELECT COALESCE(e.merged_into, e.id) AS root, COUNT(DISTINCT m.message_id) FROM graph_entities e"
            f" CROSS JOIN graph_mentions m ON m.entity_id = e.id"
            f" WHERE e.id IN ({','.join('?' * len(members))}) AND COALESCE(e.merged_into, e.id) IN ({marks})"
            " GROUP BY root",
            (*members, *neighbours),
        )
    }
    weights: dict[int, float] = {}
    for group in linked.values():
        ranked = sorted(group, key=lambda n: (frequency.get(n, 0), n))[:MAX_NEIGHBOURS]
        for node in ranked:
            weights[node] = max(weights.get(node, 0.0), math.log(1 + messages / max(1, frequency.get(node, 0))))
    if not weights:
        return None
    marks = ",".join("?" * len(weights))
    members = _members(db, weights)
    scores = np.zeros(size)
    for message_id, root in db.query(
        f"SELECT DISTINCT m.message_id, COALESCE(e.merged_into, e.id) AS root FROM graph_entities e"
        f" CROSS JOIN graph_mentions m ON m.entity_id = e.id"
        f" WHERE e.id IN ({','.join('?' * len(members))}) AND m.message_id IS NOT NULL"
        f" AND COALESCE(e.merged_into, e.id) IN ({marks})",
        (*members, *weights),
    ):
        index = position.get(int(message_id))
        if index is not None:
            scores[index] += weights[int(root)]
    top = scores.max()
    return scores / top if top > 0 else None
