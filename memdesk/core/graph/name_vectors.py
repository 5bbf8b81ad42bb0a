"""The embeddings of an agent's entity names, kept in memory so a new name can join the entity it
evidently means ("Annie" of "Ann") without embedding every known name again.

Embedding is the slow part of resolving a name (a sentence model on a busy CPU), so a writer
``prepare``s the names it is about to resolve before it opens its transaction: the cache of known
names is filled and the new names embedded then, and the transaction itself only reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from memdesk.core.graph.records import NAMED_KINDS
from memdesk.core.storage import Database

#: Cosine similarity of two names' embeddings above which they are taken as one entity.
VECTOR_MERGE = 0.9


class NameVectors:
    def __init__(self, db: Database, embedder) -> None:
        """``embedder`` may be None: then no name merges by meaning (only lexical aliases do)."""
        self._db = db
        self._embedder = embedder
        self._known: dict[int, tuple[list[int], np.ndarray | None]] = {}
        self._prepared: dict[str, np.ndarray] = {}

    @property
    def enabled(self) -> bool:
        return self._embedder is not None

    def prepare(self, agent_id: int, names: Iterable[str]) -> None:
        """Embed now, outside any transaction, what resolving ``names`` would need (the names
        prepared before are let go: they were resolved)."""
        if self._embedder is None:
            return
        self._vectors(agent_id)
        wanted = sorted(set(names))
        kept = {name: self._prepared[name] for name in wanted if name in self._prepared}
        new = [name for name in wanted if name not in kept]
        if new:
            kept.update(zip(new, _normalised(self._embedder.embed(new)), strict=True))
        self._prepared = kept

    def target(self, agent_id: int, name: str) -> int | None:
        """The root entity whose name means the same as ``name``, or None."""
        ids, matrix = self._vectors(agent_id)
        if matrix is None or not ids:
            return None
        scores = matrix @ self._vector(name)
        best = int(np.argmax(scores))
        if scores[best] < VECTOR_MERGE:
            return None
        if not self._db.scalar(
            "SELECT 1 FROM graph_entities WHERE id = ? AND merged_into IS NULL AND deleted = 0", (ids[best],)
        ):
            # Removed or merged from another connection (a forget) since the cache was built.
            self.forget(agent_id)
            return self.target(agent_id, name)
        return ids[best]

    def remember(self, agent_id: int, entity_id: int, name: str) -> None:
        """A new root entity: later names may mean it."""
        if self._embedder is None or agent_id not in self._known:
            return
        ids, matrix = self._known[agent_id]
        vector = self._vector(name)[None, :]
        self._known[agent_id] = (ids + [entity_id], vector if matrix is None else np.vstack([matrix, vector]))

    def forget(self, agent_id: int) -> None:
        self._known.pop(agent_id, None)

    def _vector(self, name: str) -> np.ndarray:
        prepared = self._prepared.get(name)
        return prepared if prepared is not None else _normalised(self._embedder.embed([name]))[0]

    def _vectors(self, agent_id: int) -> tuple[list[int], np.ndarray | None]:
        if agent_id not in self._known:
            rows = self._db.query(
                f"SELECT id, name FROM graph_entities WHERE agent_id = ? AND merged_into IS NULL AND deleted = 0"
                f" AND kind IN ({','.join('?' * len(NAMED_KINDS))})",
                (agent_id, *sorted(NAMED_KINDS)),
            )
            ids = [int(r[0]) for r in rows]
            matrix = _normalised(self._embedder.embed([r[1] for r in rows])) if rows else None
            self._known[agent_id] = (ids, matrix)
        return self._known[agent_id]


def _normalised(vectors: Sequence | np.ndarray) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)
