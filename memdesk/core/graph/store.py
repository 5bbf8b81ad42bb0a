"""The knowledge graph of one store: entities (with aliases), their mentions and dated facts.

Every name the extractor meets gets its own entity row; a row that names the same thing as
another points at it through ``merged_into`` (always the root: merges are kept flat). The root is
the entity people see, the other rows are its aliases, and since mentions and facts keep the row
they were written against, a merge is undone by clearing one column.

Facts are never deleted by newer facts: a single-valued relation ("lives in") given a new object
closes the old fact (``valid_to``), so "where did Ann live before?" stays answerable.

``KnowledgeGraph`` is one object over one connection, made of a part per job, each in its module
and each handed the other parts it uses (none reaches into another's state):
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
from memdesk.core.graph.records import AUTHORS, NAMED_KINDS, SELF_KIND, Edit, Entity, Fact, Generation
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


class KnowledgeGraph:
    """The graph over one database connection. ``embedder`` (optional) lets new names merge
    with known ones by meaning; without it only lexical aliases merge. Its methods are its parts'
    (the part that does the job answers), so readers and writers see one object."""

    def __init__(self, db: Database, clock: Clock, embedder=None, *, history: ChangeRecorder | None = None) -> None:
        self._db = db
        self._clock = clock
        self._names = NameVectors(db, embedder)
        # Writes through this object; other connections' commits show in PRAGMA data_version.
        self._generation = Generation()
        changes = ChangeRecording(db, history, self._forget_vectors)
        entities = Entities(db, clock, self._names, changes, self._generation)
        facts = MentionsAndFacts(db, clock, entities, changes, self._generation)
        edits = UserEdits(db, entities, facts, changes, self._forget_vectors)
        user = TheUser(db, clock, entities, facts, changes, self._forget_vectors)

        # changes.py: row states for the memory history, and a revert
        self.row_states = changes.row_states
        self.state_text = changes.state_text
        self.restore_rows = changes.restore_rows
        # entities.py
        self.root = entities.root
        self.entity = entities.entity
        self.find = entities.find
        self.entities = entities.entities
        self.resolve = entities.resolve
        self.prepare_names = entities.prepare_names
        # facts.py
        self.add_mention = facts.add_mention
        self.mentions = facts.mentions
        self.clear_source = facts.clear_source
        self.add_fact = facts.add_fact
        self.fact = facts.fact
        self.facts = facts.facts
        self.all_facts = facts.all_facts
        self.count = facts.count
        self.neighbourhood = facts.neighbourhood
        self.top_entities = facts.top_entities
        # edits.py
        self.rename = edits.rename
        self.merge = edits.merge
        self.split = edits.split
        self.alias_rows = edits.alias_rows
        self.delete_entity = edits.delete_entity
        self.insert_fact = edits.insert_fact
        self.edit_fact = edits.edit_fact
        self.delete_fact = edits.delete_fact
        self.undo = edits.undo
        # the_user.py
        self.user_entity = user.user_entity
        self.taken_user_name = user.taken_user_name
        self.the_user = user.the_user
        self.follow_user_name = user.follow_user_name

    @property
    def db(self) -> Database:
        return self._db

    @property
    def clock(self) -> Clock:
        return self._clock

    def _forget_vectors(self, agent_id: int) -> None:
        self._generation.bump()
        self._names.forget(agent_id)

    def drop_cached(self, agent_id: int) -> None:
        """Forget what this object keeps in memory about an agent's graph: its rows were removed
        underneath it (memdesk.core.memory.forget), and a cached name vector would point at one."""
        self._forget_vectors(agent_id)
