"""The graph as the model reads it: a paged depth-2 subgraph and the "top entities" section."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memdesk.core.graph.store import Entity, Fact, KnowledgeGraph
from memdesk.core.storage import Database

FACTS_PER_PAGE = 10


@dataclass(frozen=True)
class SubgraphPage:
    entity: Entity
    lines: list[str]
    total: int
    page: int
    pages: int
    entities: int


def _day(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d}"


def source_label(db: Database, fact: Fact) -> str:
    """Where a fact came from, as a citation the agent can follow with conversation_search_date."""
    if fact.message_id is not None:
        row = db.query_one("SELECT created_at, author, role FROM messages WHERE id = ?", (fact.message_id,))
        if row is not None:
            who = row[1] or ("user" if row[2] == "user" else "assistant")
            return f"message of {row[0][:16].replace('T', ' ')} by {who}"
    if fact.passage_id is not None:
        row = db.query_one(
            "SELECT d.title, p.page FROM passages p LEFT JOIN documents d ON d.id = p.document_id WHERE p.id = ?",
            (fact.passage_id,),
        )
        if row is not None:
            return f"document {row[0]}" + (f" p.{row[1]}" if row[1] else "") if row[0] else "archival memory"
    return {"agent": "written by you", "user": "written by the user"}.get(fact.author, "extracted")


def fact_line(db: Database, fact: Fact) -> str:
    span = f"{_day(fact.valid_from)} to {_day(fact.valid_to)}" if fact.valid_to else f"since {_day(fact.valid_from)}"
    return f"- {fact.subject} | {fact.relation} | {fact.object} ({span}; {source_label(db, fact)})"


def subgraph_page(
    graph: KnowledgeGraph, entity: Entity, *, depth: int = 2, page: int = 0, page_size: int = FACTS_PER_PAGE
) -> SubgraphPage:
    """Facts within ``depth`` hops, current facts before closed ones, nearer rings first."""
    nodes, facts = graph.neighbourhood(entity.id, depth)
    ring = {node: index for index, node in enumerate(nodes)}
    facts.sort(
        key=lambda f: (
            f.valid_to is not None,
            min(ring.get(f.subject_id, 99), ring.get(f.object_id, 99)) > 0,
            -f.valid_from.timestamp(),
            f.id,
        )
    )
    pages = max(1, -(-len(facts) // page_size))
    window = facts[page * page_size : (page + 1) * page_size]
    return SubgraphPage(entity, [fact_line(graph.db, f) for f in window], len(facts), page, pages, len(nodes))


def render_top_entities(graph: KnowledgeGraph, agent_id: int, limit: int) -> str:
    """The prompt section: the ``limit`` entities that matter now (the graph_top_entities setting),
    by frequency x recency; empty when none."""
    if limit <= 0:
        return ""
    top = graph.top_entities(agent_id, limit)
    if not top:
        return ""
    items = []
    for entity, _score in top:
        seen = f", last {_day(entity.last_seen)}" if entity.last_seen else ""
        items.append(f"{entity.name} ({entity.kind}, {entity.mentions}x{seen})")
    return (
        "### Knowledge graph\nTop entities: "
        + "; ".join(items)
        + ".\nUse knowledge_graph_search(entity) for what is known about one."
    )
