"""The entity that stands for the app's user, under the name the user gave (the ``user_name`` setting).

The extractor makes the user an entity of kind ``self`` the first time a text says something about
its speaker ("I moved to Porto"). It bears the user's name when one is set, "User" otherwise. A name
set or changed later renames it: the entity already called so ("Ada", from "Hi, I am Ada") or a new
one becomes the user, and the old entity with its aliases become its aliases, so facts written
against "User" or an older name still resolve to the user. That renaming is one change in the
memory history, by MemDesk, revertible like any other. ``graph_user_names`` keeps the name each
agent's graph last took: the graph follows a new name once, so a renaming the user reverted stays
reverted until the setting changes again.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from memdesk.core.base.clock import Clock, iso
from memdesk.core.graph import names
from memdesk.core.graph.changes import ENTITY_CHANGE, ChangeRecording
from memdesk.core.graph.entities import Entities
from memdesk.core.graph.facts import MentionsAndFacts
from memdesk.core.graph.records import SELF_KIND, Edit
from memdesk.core.storage import Database

#: The user's entity's name while the user has not told theirs.
PLACEHOLDER = "User"
#: The memory history's note on a renaming: why MemDesk changed the graph.
NAMING_NOTE = "your name, from Settings (Your name)"
SPEAKER_NOTE = "you, who wrote the text"


class TheUser:
    """The part of ``KnowledgeGraph`` that keeps the user's own entity and its name. A renaming
    merges entities (``facts`` reconciles their facts) and is recorded as one change (``changes``);
    ``forget_vectors`` drops what the graph keeps in memory about the agent's rows after it."""

    def __init__(
        self,
        db: Database,
        clock: Clock,
        entities: Entities,
        facts: MentionsAndFacts,
        changes: ChangeRecording,
        forget_vectors: Callable[[int], None],
    ) -> None:
        self._db = db
        self._clock = clock
        self._entities = entities
        self._facts = facts
        self._changes = changes
        self._forget_vectors = forget_vectors

    def user_entity(self, agent_id: int) -> int | None:
        """The root entity standing for the user (a visible one first, the one bearing the name
        the graph last took first among those), or None before the graph has one."""
        taken = self.taken_user_name(agent_id)
        row = self._db.query_one(
            "SELECT id FROM graph_entities WHERE agent_id = ? AND kind = ? AND merged_into IS NULL"
            " ORDER BY deleted, key = ? DESC, id LIMIT 1",
            (agent_id, SELF_KIND, names.name_key(taken) if taken else ""),
        )
        return None if row is None else int(row[0])

    def taken_user_name(self, agent_id: int) -> str | None:
        return self._db.scalar("SELECT name FROM graph_user_names WHERE agent_id = ?", (agent_id,))

    def the_user(
        self,
        agent_id: int,
        name: str,
        *,
        at: datetime | None = None,
        message_id: int | None = None,
        passage_id: int | None = None,
    ) -> int:
        """The user's entity, made now if the graph has none yet: named ``name`` when it is a
        usable name (the entity already called so becomes the user), else "User"."""
        found = self.user_entity(agent_id)
        if found is not None:
            return found
        named = names.valid_name(name)
        # "User" may be known already, from the agent's own facts about the person it talks to.
        placeholder = self._db.scalar(
            "SELECT COALESCE(merged_into, id) FROM graph_entities WHERE agent_id = ? AND key = ? AND deleted = 0",
            (agent_id, names.name_key(PLACEHOLDER)),
        )
        entity_id = self._entities.resolve(
            agent_id, name if named else PLACEHOLDER, SELF_KIND, at=at, message_id=message_id, passage_id=passage_id
        )
        assert entity_id is not None  # the placeholder is a valid name
        row = self._db.query_one("SELECT kind, merged_into, deleted FROM graph_entities WHERE id = ?", (entity_id,))
        previous = placeholder if placeholder is not None and placeholder != self._entities.root(entity_id) else None
        if (row[0], row[1], row[2]) != (SELF_KIND, None, 0) or previous is not None:
            # "Ada" (a person the texts named), or "User" of the agent's facts, is the user.
            self._become_user(agent_id, entity_id, previous, note=NAMING_NOTE if named else SPEAKER_NOTE)
        if named:
            self._take_name(agent_id, name)
        return entity_id

    def follow_user_name(self, agent_id: int, name: str) -> bool:
        """Give the user's entity ``name`` if the graph has not taken that name yet (a name set or
        changed since). True when the graph changed. Without a user's entity nothing is done: it
        gets the name when it is made; nor to one the user deleted."""
        if not names.valid_name(name) or names.display_name(name) == self.taken_user_name(agent_id):
            return False
        current = self.user_entity(agent_id)
        if current is None:
            return False
        with self._db.transaction():
            # An entity the user deleted stays deleted: a new name must not bring it back.
            hidden = bool(self._db.scalar("SELECT deleted FROM graph_entities WHERE id = ?", (current,)))
            changed = not hidden and self._become_user(agent_id, None, current, name)
            self._take_name(agent_id, name)
        return changed

    def _take_name(self, agent_id: int, name: str) -> None:
        self._db.execute(
            "INSERT INTO graph_user_names(agent_id, name) VALUES (?, ?) ON CONFLICT(agent_id) DO UPDATE"
            " SET name = excluded.name",
            (agent_id, names.display_name(name)),
        )

    def _become_user(
        self,
        agent_id: int,
        entity_id: int | None,
        previous: int | None,
        name: str | None = None,
        *,
        note: str = NAMING_NOTE,
    ) -> bool:
        """Make ``entity_id`` (or the row keyed ``name``, made if missing) the user's root entity,
        with ``previous`` (the user's entity until now) and its aliases as its aliases. One
        recorded change; True when any row changed."""
        with self._db.transaction():
            edit = Edit(
                "",
                self._changes.snapshot("graph_entities", "id = ? OR merged_into = ?", (previous, previous))
                if previous
                else [],
            )
            old_name = self._entities.entity(previous).name if previous is not None else None
            if entity_id is None:
                assert name is not None
                found = self._db.query_one(
                    "SELECT id FROM graph_entities WHERE agent_id = ? AND key = ?", (agent_id, names.name_key(name))
                )
                if found is None:
                    cursor = self._db.execute(
                        "INSERT INTO graph_entities(agent_id, name, key, kind, author, created_at)"
                        " VALUES (?, ?, ?, ?, 'user', ?)",
                        (agent_id, names.display_name(name), names.name_key(name), SELF_KIND, iso(self._clock.now())),
                    )
                    entity_id = int(cursor.lastrowid)
                    edit.inserted.append(("graph_entities", entity_id))
                else:
                    entity_id = int(found[0])
            if (
                not any(row["id"] == entity_id for _t, row in edit.before)
                and ("graph_entities", entity_id) not in edit.inserted
            ):
                edit.before += self._changes.snapshot("graph_entities", "id = ?", (entity_id,))
            shown = (
                names.display_name(name)
                if name is not None
                else self._db.scalar("SELECT name FROM graph_entities WHERE id = ?", (entity_id,))
            )
            self._db.execute(
                "UPDATE graph_entities SET merged_into = NULL, kind = ?, deleted = 0, name = ? WHERE id = ?",
                (SELF_KIND, shown, entity_id),
            )
            if previous is not None and previous != entity_id:
                self._db.execute(
                    "UPDATE graph_entities SET merged_into = ? WHERE (id = ? OR merged_into = ?) AND id != ?",
                    (entity_id, previous, previous, entity_id),
                )
                edit.before += self._facts.reconcile(
                    entity_id
                )  # "User lives in Lisbon" and "Ada lives in Porto" are one person's now
            edit.label = f"{old_name} is now {shown}" if old_name and old_name != shown else f"{shown} is you"
            changed = bool(self._changes.changed_rows(self._changes.edit_rows(edit))[0])
            self._changes.record_edit(
                agent_id,
                ENTITY_CHANGE,
                entity_id,
                "update",
                edit,
                source="app",
                before=old_name,
                after=f"{shown} (you)",
                label=edit.label,
                note=note,
            )
        self._forget_vectors(agent_id)
        return changed
