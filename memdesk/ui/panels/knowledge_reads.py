"""What the Knowledge panel shows, read from the store (on the panels' reads thread, never the GUI
thread): the agent's entities with a filter, and one entity with its facts, where each came from
and its neighbourhood. Plain functions of the graph, without Qt."""

from __future__ import annotations

from dataclasses import dataclass

from memdesk.core.base.errors import MemDeskError
from memdesk.core.graph.render import source_label
from memdesk.core.graph.store import Entity, Fact, KnowledgeGraph
from memdesk.core.memory.graph_revert import GRAPH_KINDS
from memdesk.core.memory.history import USER, Change
from memdesk.core.memory.revert import Reverter

#: The entities the panel lists at most (the most mentioned first).
ENTITY_LIMIT = 2000


@dataclass(frozen=True)
class EntityList:
    """The entities matching a filter, the agent's totals, whether the entity shown is gone (deleted
    or merged away since) and the user's edit Undo takes back next (with a reverter)."""

    agent_id: int | None
    entities: list[Entity]
    totals: tuple[int, int]  # entities, current facts
    shown_gone: bool
    next_undo: Change | None


def read_list(
    graph: KnowledgeGraph, reverter: Reverter | None, agent_id: int | None, text: str, shown: int | None
) -> EntityList:
    if not agent_id:
        return EntityList(agent_id, [], (0, 0), shown is not None, None)
    entities = graph.entities(agent_id, text=text, limit=ENTITY_LIMIT)
    return EntityList(
        agent_id,
        entities,
        graph.count(agent_id),
        shown is not None and _gone(graph, shown),
        _next_undo(reverter, agent_id),
    )


def _gone(graph: KnowledgeGraph, entity_id: int) -> bool:
    try:
        return graph.entity(entity_id).deleted
    except MemDeskError:
        return True


def _next_undo(reverter: Reverter | None, agent_id: int) -> Change | None:
    """The recorded edit Undo takes back next: the user's newest graph change not undone yet."""
    if reverter is None:
        return None
    return reverter.history.newest_unreverted(agent_id, GRAPH_KINDS, source=USER)


@dataclass(frozen=True)
class EntityView:
    """One entity (the one an alias or a merged entity leads to), its facts with where each came
    from ("" for none), and the facts around it."""

    entity: Entity
    facts: list[Fact]
    sources: list[str]
    neighbourhood: list[Fact]


def read_entity(graph: KnowledgeGraph, entity_id: int) -> EntityView:
    entity = graph.entity(graph.root(entity_id))
    facts = graph.facts(entity.id)
    sources = [source_label(graph.db, fact) if fact.source() else "" for fact in facts]
    _nodes, neighbourhood = graph.neighbourhood(entity.id, 1)
    return EntityView(entity, facts, sources, neighbourhood)
