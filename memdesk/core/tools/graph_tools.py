"""The agent's knowledge-graph functions. Their docstrings are what the model reads about them."""

from __future__ import annotations

from memdesk.core.base.errors import ToolError
from memdesk.core.graph.render import subgraph_page
from memdesk.core.tools.context import ToolContext
from memdesk.core.tools.registry import Tool, make_tool

MAX_DEPTH = 2


def _graph(ctx: ToolContext):
    if ctx.graph is None:
        raise ToolError("The knowledge graph is not available")
    return ctx.graph


def knowledge_graph_search(ctx: ToolContext, entity: str, depth: int | None = 2, page: int | None = 0) -> str:
    """Facts your knowledge graph holds about a person, place or thing, up to two hops away.

    Args:
        entity: A name, for example Ann or Paris.
        depth: Hops to follow, 1 or 2 (default 2).
        page: Result page, from 0.
    """
    graph = _graph(ctx)
    page = page or 0
    if page < 0:
        raise ToolError("page counts from 0")
    depth = MAX_DEPTH if depth is None else depth
    if not 1 <= depth <= MAX_DEPTH:
        raise ToolError(f"depth must be 1 or {MAX_DEPTH}")
    if not entity.strip():
        raise ToolError("entity must not be empty")
    found = graph.find(ctx.agent_id, entity)
    if found is None:
        similar = graph.entities(ctx.agent_id, text=entity.split()[0] if entity.split() else entity, limit=5)
        hint = f" Known entities with a similar name: {', '.join(e.name for e in similar)}." if similar else ""
        return f"No entity named {entity!r} in the knowledge graph.{hint}"
    result = subgraph_page(graph, found, depth=depth, page=page)
    ctx.last_page = (page, result.pages)
    if result.total and page >= result.pages:
        raise ToolError(f"page {page} is past the last page ({result.pages - 1})")
    aliases = f" (also called {', '.join(found.aliases)})" if found.aliases else ""
    head = f"{found.name}{aliases}: {found.kind}, mentioned {found.mentions} times"
    if found.last_seen:
        head += f", last on {found.last_seen:%Y-%m-%d}"
    if not result.total:
        return head + ". No facts are known about it yet."
    return "\n".join(
        [
            f"{head}. Showing {len(result.lines)} of {result.total} facts (page {page + 1}/{result.pages}):",
            *result.lines,
        ]
    )


def knowledge_graph_insert(ctx: ToolContext, subject: str, relation: str, object: str) -> str:  # noqa: A002 - the model's name for it
    """Record a fact in your knowledge graph, for example Ann, lives in, Paris (a new home or job closes the old one).

    Args:
        relation: A short verb phrase such as lives in, likes, sister of.
    """
    graph = _graph(ctx)
    # The fact's source is the user's latest message: the one the agent is acting on.
    source = graph.db.scalar(
        "SELECT MAX(id) FROM messages WHERE agent_id = ? AND kind = 'user_message'", (ctx.agent_id,)
    )
    fact, _edit = graph.insert_fact(
        ctx.agent_id,
        subject,
        relation,
        object,
        author="agent",
        message_id=source,
        valid_from=ctx.clock.now(),
        cause=ctx.cause,
    )
    return f"Recorded: {fact.subject} | {fact.relation} | {fact.object}."


GRAPH_FUNCTIONS = [knowledge_graph_search, knowledge_graph_insert]


def graph_tools() -> list[Tool]:
    # Kinds for the loop's chain rules; the search only reads, so it runs outside the step's transaction.
    return [
        make_tool(knowledge_graph_search, kind="search", writes_store=False),
        make_tool(knowledge_graph_insert, kind="edit"),
    ]
