"""The knowledge graph of one store: entities (with aliases), their mentions and dated facts.

Every name the extractor meets gets its own entity row; a row that names the same thing as
another points at it through ``merged_into`` (always the root: merges are kept flat). The root is
the entity people see, the other rows are its aliases, and since mentions and facts keep the row
they were written against, a merge is undone by clearing one column.

Facts are never deleted by newer facts: a single-valued relation ("lives in") given a new object
closes the old fact (``valid_to``), so "where did Ann live before?" stays answerable.

``KnowledgeGraph`` is one object over one connection, made of a part per job, each in its module:
  changes.py      recording every change in the memory history, with the rows it touched (revert)
  entities.py     finding and resolving names (name_vectors.py: merging names by meaning)
  facts.py        mentions, facts, an entity's neighbourhood, the top entities
  edits.py        the user's edits, each an ``Edit`` that ``undo`` reverts
  the_user.py     the entity standing for the app's user, under the name the user gave
(records.py holds the types they share.)
"""

from __future__ import annotations

from memdesk.core.base.clock import Clock
from memdesk.core.graph.changes import ENTITY_CHANGE, FACT_CHANGE, ROW_TABLES, ChangeRecorder, ChangeRecording, RowState
from memdesk.core.graph.edits import UserEdits
from memdesk.core.graph.entities import Entities
from memdesk.core.graph.facts import MentionsAndFacts
from memdesk.core.graph.name_vectors import NameVectors
from memdesk.core.graph.records import AUTHORS, NAMED_KINDS, SELF_KIND, Edit, Entity, Fact
from memdesk.core.graph.the_user import TheUser
from memdesk.core.storage import Database

__all__ = [
    "AUTHORS",
    "ENTITY_CHANGE",
    "FACT_CHANGE",
    "NAMED_KINDS",
    "ROW_TABLES",
    "SELF_KIND",
    "ChangeRecorder",
    "Edit",
    "Entity",
    "Fact",
    "KnowledgeGraph",
    "RowState",
]


class KnowledgeGraph(ChangeRecording, Entities, MentionsAndFacts, UserEdits, TheUser):
    """The graph over one database connection. ``embedder`` (optional) lets new names merge
    with known ones by meaning; without it only lexical aliases merge."""

    def __init__(self, db: Database, clock: Clock, embedder=None, *, history: ChangeRecorder | None = None) -> None:
        self._db = db
        self._clock = clock
        self._names = NameVectors(db, embedder)
        self._history = history
        # Above zero while one edit runs: its inner steps are recorded as one change at its end.
        self._grouping = 0
        # Writes through this object; other connections' commits show in PRAGMA data_version.
        self._generation = 0
        self._top_cache: dict[int, tuple[tuple, list[tuple[Entity, float]]]] = {}

    @property
    def db(self) -> Database:
        return self._db

    @property
    def clock(self) -> Clock:
        return self._clock

    def _forget_vectors(self, agent_id: int) -> None:
        self._generation += 1
        self._names.forget(agent_id)

    def drop_cached(self, agent_id: int) -> None:
        """Forget what this object keeps in memory about an agent's graph: its rows were removed
        underneath it (memdesk.core.memory.forget), and a cached name vector would point at one."""
        self._forget_vectors(agent_id)
