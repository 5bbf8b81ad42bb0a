"""Memory's operations as another app reaches them, with MemGPT's meaning: searches over the
conversation (recall memory), archival memory and the knowledge graph, and core memory's blocks
read and edited. Each returns plain data (what MCP's structured output carries), every text in it
quoted memory (quoting.py). Writes go through memory's owners, so each is in the memory history,
with the app and its reason as the change's cause, and can be reverted like any other.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from memdesk.core.base.errors import ToolError
from memdesk.core.memory.history import MCP, Cause
from memdesk.core.memory.recall import Message
from memdesk.core.memory.services import MemoryServices

CONVERSATION, ARCHIVAL, GRAPH = "conversation", "archival", "graph"
SOURCES = (CONVERSATION, ARCHIVAL, GRAPH)
#: Most hits one search returns (a client's model pays for each in its context).
MAX_HITS = 50
#: Most characters of one hit's text: a long message is cut, saying so.
HIT_CHARS = 2000
#: Most facts a graph query returns.
MAX_FACTS = 100


def _day(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _cut(text: str, chars: int = HIT_CHARS) -> str:
    return text if len(text) <= chars else text[:chars] + f"… [{len(text) - chars} more characters]"


def _within(moment: datetime | None, start: date | None, end: date | None) -> bool:
    if moment is None:
        return start is None and end is None
    day = moment.date()
    return (start is None or day >= start) and (end is None or day <= end)


def parse_day(value: str | None, name: str) -> date | None:
    """A date argument (YYYY-MM-DD) from a client; ToolError saying what is expected."""
    if value is None or value == "":
        return None
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        raise ToolError(f"{name} must be a date written YYYY-MM-DD, got {value!r}") from None


def reason_cause(app: str, reason: str, *, approved: bool = False) -> Cause:
    """The memory history's cause for a write an app asked for: the app and its reason."""
    how = "approved write" if approved else "write"
    return Cause(note=f"{how} from {app} over MCP: {' '.join(reason.split())[:200]}")


class MemoryAccess:
    """The operations over one store's memory (``MemoryServices``: one connection's)."""

    def __init__(self, memory: MemoryServices) -> None:
        self._memory = memory

    @property
    def memory(self) -> MemoryServices:
        return self._memory

    def _graph(self):
        graph = self._memory.graph
        if graph is None:
            raise ToolError("This store has no knowledge graph")
        return graph

    # --- searches --------------------------------------------------------------------------
    def message_hit(self, message: Message, score: float | None = None) -> dict[str, Any]:
        who = message.author or ("assistant" if message.role == "assistant" else "user")
        hit: dict[str, Any] = {
            "source": CONVERSATION,
            "ref": f"message:{message.id}",
            "date": _day(message.created_at),
            "who": who,
            "text": _cut(message.search_text),
        }
        if score is not None:
            hit["score"] = round(float(score), 4)
        return hit

    def conversation(
        self,
        agent_id: int,
        query: str | None,
        *,
        start: date | None = None,
        end: date | None = None,
        limit: int = 10,
        page: int = 0,
    ) -> dict[str, Any]:
        """Messages of the conversation: by relevance to ``query`` (within the dates when given),
        or, without a query, every message between the dates, oldest first."""
        limit = max(1, min(int(limit), MAX_HITS))
        recall = self._memory.recall
        if not (query or "").strip():
            if start is None and end is None:
                raise ToolError("give a query, a date range, or both")
            page_ = recall.search_date(
                agent_id, start or date(1970, 1, 1), end or date(9999, 12, 30), page=page, page_size=limit
            )
            hits = [self.message_hit(m) for m in page_.hits]
            return {"hits": hits, "total": page_.total, "page": page, "pages": page_.pages}
        ranked = recall.rank(agent_id, str(query))
        if start is not None or end is not None:
            found = {m.id: m for m in recall.get_many([r.id for r in ranked])}
            ranked = [r for r in ranked if r.id in found and _within(found[r.id].created_at, start, end)]
        window = ranked[page * limit : (page + 1) * limit]
        messages = {m.id: m for m in recall.get_many([r.id for r in window])}
        hits = [self.message_hit(messages[r.id], r.score) for r in window if r.id in messages]
        pages = max(1, -(-len(ranked) // limit))
        return {"hits": hits, "total": len(ranked), "page": page, "pages": pages}

    def archival(
        self,
        agent_id: int,
        query: str,
        *,
        start: date | None = None,
        end: date | None = None,
        limit: int = 10,
        page: int = 0,
    ) -> dict[str, Any]:
        """Archival passages by meaning and words, each with its citation."""
        if not query.strip():
            raise ToolError("query must not be empty")
        limit = max(1, min(int(limit), MAX_HITS))
        archival = self._memory.archival
        if start is None and end is None:
            found = archival.search(agent_id, query, page=page, page_size=limit)
            hits, total = found.hits, found.total
        else:
            every = archival.search(agent_id, query, page=0, page_size=1000).hits
            kept = [h for h in every if _within(h.passage.created_at, start, end)]
            hits, total = kept[page * limit : (page + 1) * limit], len(kept)
        items = []
        for hit in hits:
            passage = hit.passage
            item: dict[str, Any] = {
                "source": ARCHIVAL,
                "ref": f"passage:{passage.id}",
                "date": _day(passage.created_at),
                "text": _cut(passage.text),
                "score": round(float(hit.score), 4),
            }
            if passage.citation.document is not None:
                item["where"] = passage.citation.label()
            if passage.tags:
                item["tags"] = list(passage.tags)
            items.append(item)
        return {"hits": items, "total": total, "page": page, "pages": max(1, -(-total // limit))}

    def graph(self, agent_id: int, entity: str, *, at: date | None = None, depth: int = 1) -> dict[str, Any]:
        """An entity of the knowledge graph and its facts: those valid now, or on the date ``at``."""
        graph = self._graph()
        if not entity.strip():
            raise ToolError("entity must not be empty")
        if depth not in (1, 2):
            raise ToolError("depth must be 1 or 2")
        found = graph.find(agent_id, entity)
        if found is None:
            similar = graph.entities(agent_id, text=entity.split()[0], limit=5)
            return {"entity": None, "similar": [e.name for e in similar], "facts": []}
        _ids, facts = graph.neighbourhood(found.id, depth)
        if at is None:
            kept = [f for f in facts if f.current]
        else:
            moment = datetime.combine(at + timedelta(days=1), time.min, tzinfo=UTC)
            kept = [f for f in facts if f.valid_from < moment and (f.valid_to is None or f.valid_to >= moment)]
        return {
            "entity": {
                "name": found.name,
                "kind": found.kind,
                "aliases": list(found.aliases),
                "mentions": found.mentions,
                "last_seen": _day(found.last_seen),
            },
            "at": at.isoformat() if at else "now",
            "facts": [
                {
                    "source": GRAPH,
                    "ref": f"fact:{f.id}",
                    "subject": f.subject,
                    "relation": f.relation,
                    "object": f.object,
                    "valid_from": _day(f.valid_from),
                    "valid_to": _day(f.valid_to),
                }
                for f in kept[:MAX_FACTS]
            ],
            "total_facts": len(kept),
        }

    def graph_hits(self, agent_id: int, query: str, limit: int) -> list[dict[str, Any]]:
        """The current facts of the entities a query names, as search hits."""
        graph = self._graph()
        hits: list[dict[str, Any]] = []
        seen: set[int] = set()
        for entity in graph.entities(agent_id, text=query, limit=3):
            for fact in graph.facts(entity.id, current_only=True):
                if fact.id in seen:
                    continue
                seen.add(fact.id)
                hits.append(
                    {
                        "source": GRAPH,
                        "ref": f"fact:{fact.id}",
                        "date": _day(fact.valid_from),
                        "text": f"{fact.subject} {fact.relation} {fact.object}",
                    }
                )
                if len(hits) >= limit:
                    return hits
        return hits

    def search(
        self,
        agent_id: int,
        query: str,
        *,
        sources: tuple[str, ...] = SOURCES,
        start: date | None = None,
        end: date | None = None,
        limit: int = 10,
    ) -> dict[str, Any]:
        """The hybrid search: each source's best hits (words and meaning), merged by rank, since
        scores of different sources do not compare: the first of each, then the second..."""
        if not query.strip():
            raise ToolError("query must not be empty")
        unknown = [s for s in sources if s not in SOURCES]
        if unknown:
            raise ToolError(f"unknown source(s) {', '.join(unknown)}; choose from {', '.join(SOURCES)}")
        limit = max(1, min(int(limit), MAX_HITS))
        ranked: list[list[dict[str, Any]]] = []
        if CONVERSATION in sources:
            ranked.append(self.conversation(agent_id, query, start=start, end=end, limit=limit)["hits"])
        if ARCHIVAL in sources and self._memory.archival.has_any(agent_id):
            ranked.append(self.archival(agent_id, query, start=start, end=end, limit=limit)["hits"])
        if GRAPH in sources and start is None and end is None:
            ranked.append(self.graph_hits(agent_id, query, limit))
        merged: list[dict[str, Any]] = []
        for depth in range(max((len(r) for r in ranked), default=0)):
            merged.extend(r[depth] for r in ranked if depth < len(r))
        return {"hits": merged[:limit]}

    # --- core memory -----------------------------------------------------------------------
    def blocks(self, agent_id: int) -> list[dict[str, Any]]:
        return [
            {
                "label": b.label,
                "description": b.description,
                "characters": b.chars,
                "limit": b.limit,
                "read_only": b.read_only,
                "version": b.version,
                "updated_by": b.updated_by,
                "updated_at": _day(b.updated_at),
            }
            for b in self._memory.core.blocks(agent_id)
        ]

    def block(self, agent_id: int, label: str) -> dict[str, Any]:
        block = self._memory.core.get(agent_id, label)
        if block is None:
            labels = ", ".join(b.label for b in self._memory.core.blocks(agent_id)) or "none"
            raise ToolError(f"No memory block named {label!r} (blocks: {labels})")
        return {
            "label": block.label,
            "value": block.value,
            "characters": block.chars,
            "limit": block.limit,
            "read_only": block.read_only,
            "version": block.version,
            "description": block.description,
        }

    def append(self, agent_id: int, label: str, content: str, cause: Cause) -> dict[str, Any]:
        if not content.strip():
            raise ToolError("content must not be empty")
        db = self._memory.db
        # The block is read inside the write transaction (BEGIN IMMEDIATE), so two apps appending
        # at once both land: the second reads what the first wrote.
        with db.transaction():
            block = self._memory.core.append(agent_id, label, content, cause=cause, source=MCP)
        return self._written(block, cause)

    def replace(self, agent_id: int, label: str, old_content: str, new_content: str, cause: Cause) -> dict[str, Any]:
        with self._memory.db.transaction():
            block = self._memory.core.replace(agent_id, label, old_content, new_content, cause=cause, source=MCP)
        return self._written(block, cause)

    def insert(self, agent_id: int, content: str, tags: list[str], cause: Cause) -> dict[str, Any]:
        if not content.strip():
            raise ToolError("content must not be empty")
        # Embedded before its transaction: the write lock is held for the insert only.
        ids = self._memory.archival.insert(agent_id, content, tags=tags, source=MCP, cause=cause)
        return {"status": "applied", "passages": [f"passage:{i}" for i in ids], "changes": list(cause.recorded)}

    @staticmethod
    def _written(block, cause: Cause) -> dict[str, Any]:
        return {
            "status": "applied",
            "label": block.label,
            "characters": block.chars,
            "limit": block.limit,
            "version": block.version,
            "changes": list(cause.recorded),
        }
