"""Query expansion through the knowledge graph: messages that mention an entity linked (by a
fact) to an entity the question names get a share of score.

"What did Caroline's support group do?" names "support group"; the graph links it to what was
said about it elsewhere, so turns that mention those linked entities come up even when they
share no word with the question. Each linked entity weighs by its rarity (idf over messages), so
a speaker linked to everything lends almost nothing.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

import numpy as np

from desktop.core.graph.names import name_key
from desktop.core.storage import Database

MAX_NGRAM = 4
#: Linked entities per query entity, the rarest first: a hub's thousand neighbours are noise.
MAX_NEIGHBOURS = 40
_WORD = re.compile(r"\w+", re.UNICODE)


def _candidate_keys(query: str) -> set[str]:
    words = _WORD.findall(query.casefold())
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
            f"SELECT COALESCE(merged_into, id) FROM graph_entities WHERE agent_id = ? AND deleted = 0 AND key IN ({','.join('?' * len(chunk))})",
            (agent_id, *chunk),
        )
        found.update(int(r[0]) for r in rows)
    return found


def expansion_scores(db: Database, agent_id: int, query: str, position: dict[int, int], size: int) -> np.ndarray | None:
    """Per message (aligned with ``position``: message id -> index), the summed idf of the linked
    entities it mentions, scaled to [0, 1]; None when the query names no entity with links."""
    seeds = query_entities(db, agent_id, query)
    if not seeds:
        return None
    total = max(1, int(db.scalar("SELECT COUNT(DISTINCT message_id) FROM graph_mentions WHERE agent_id = ? AND message_id IS NOT NULL", (agent_id,))))
    marks = ",".join("?" * len(seeds))
    rows = db.query(
        f"""
        SELECT DISTINCT COALESCE(s.merged_into, s.id), COALESCE(o.merged_into, o.id)
        FROM graph_facts f JOIN graph_entities s ON s.id = f.subject_id JOIN graph_entities o ON o.id = f.object_id
        WHERE f.agent_id = ? AND f.deleted = 0 AND s.deleted = 0 AND o.deleted = 0
          AND (COALESCE(s.merged_into, s.id) IN ({marks}) OR COALESCE(o.merged_into, o.id) IN ({marks}))
        """,
        (agent_id, *seeds, *seeds),
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
    frequency = {
        int(r[0]): int(r[1])
        for r in db.query(
            f"SELECT COALESCE(e.merged_into, e.id) AS root, COUNT(DISTINCT m.message_id) FROM graph_mentions m"
            f" JOIN graph_entities e ON e.id = m.entity_id WHERE COALESCE(e.merged_into, e.id) IN ({marks}) GROUP BY root",
            tuple(neighbours),
        )
    }
    weights: dict[int, float] = {}
    for group in linked.values():
        ranked = sorted(group, key=lambda n: (frequency.get(n, 0), n))[:MAX_NEIGHBOURS]
        for node in ranked:
            weights[node] = max(weights.get(node, 0.0), math.log(1 + total / max(1, frequency.get(node, 0))))
    if not weights:
        return None
    marks = ",".join("?" * len(weights))
    scores = np.zeros(size)
    for message_id, root in db.query(
        f"SELECT DISTINCT m.message_id, COALESCE(e.merged_into, e.id) AS root FROM graph_mentions m"
        f" JOIN graph_entities e ON e.id = m.entity_id WHERE m.message_id IS NOT NULL AND COALESCE(e.merged_into, e.id) IN ({marks})",
        tuple(weights),
    ):
        index = position.get(int(message_id))
        if index is not None:
            scores[index] += weights[int(root)]
    top = scores.max()
    return scores / top if top > 0 else None
