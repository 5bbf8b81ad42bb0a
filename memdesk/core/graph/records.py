"""What the knowledge graph is made of, as its readers see it: entities, facts and a user edit."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

AUTHORS = ("extractor", "agent", "user")
#: Kinds whose names are proper names: only these merge by lexical or vector similarity
#: ("Ann" and "Ann Smith" are one person; "coffee" and "coffee shop" are not one thing).
NAMED_KINDS = frozenset({"person", "place", "org", "group", "event", "work", "product", "language", "thing"})
SELF_KIND = "self"
#: Recency half-life of the "top entities" ranking.
RECENCY_HALF_LIFE_DAYS = 14.0

#: An entity's root (itself, or the entity it is an alias of), in SQL over ``graph_entities e``.
CANON = "COALESCE(e.merged_into, e.id)"


@dataclass(frozen=True)
class Entity:
    id: int
    agent_id: int
    name: str
    kind: str
    aliases: tuple[str, ...] = ()
    mentions: int = 0
    last_seen: datetime | None = None
    author: str = "extractor"
    deleted: bool = False
    merged_into: int | None = None


@dataclass(frozen=True)
class Fact:
    id: int
    agent_id: int
    subject_id: int  # canonical (root) ids
    subject: str
    relation: str
    object_id: int
    object: str
    message_id: int | None
    passage_id: int | None
    valid_from: datetime
    valid_to: datetime | None
    author: str

    @property
    def current(self) -> bool:
        return self.valid_to is None

    def source(self) -> tuple[str, int] | None:
        if self.message_id is not None:
            return ("message", self.message_id)
        if self.passage_id is not None:
            return ("passage", self.passage_id)
        return None


@dataclass
class Edit:
    """What one user edit changed: rows' previous values and rows it inserted, for ``undo``."""

    label: str
    before: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    inserted: list[tuple[str, int]] = field(default_factory=list)


class Generation:
    """Writes through one graph object, counted: with SQLite's ``PRAGMA data_version`` (other
    connections' commits) it tells whether an answer the graph keeps in memory is still right."""

    def __init__(self) -> None:
        self.value = 0

    def bump(self) -> None:
        self.value += 1


def found_in(message_id: int | None, passage_id: int | None) -> str:
    """A history note for a row taken from an archival passage (a message is linked instead)."""
    return f"found in archival passage {passage_id}" if passage_id is not None and message_id is None else ""
