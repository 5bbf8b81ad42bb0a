"""The tools MemDesk offers over MCP, with MemGPT's meaning: each one's schema, what it returns,
its annotations (read-only, destructive, idempotent) and what it runs.

The schemas are written out, not derived, because they are a public contract other apps' models
read. The agent argument lists only the agents the calling app was given; writes are listed only
to an app that may write somewhere. Every text returned is quoted memory (quoting.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memdesk.core.connections.gate import WRITES, Caller, Connections
from memdesk.core.connections.memory_access import SOURCES, parse_day

#: The longest query or message a client may send (a search needs a sentence, not a book).
QUERY_CHARS = 2000
#: The longest text a client may ask to write in one call.
CONTENT_CHARS = 20_000
REASON_CHARS = 500
LABEL_CHARS = 100

Run = Callable[[Connections, Caller, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class McpTool:
    name: str
    title: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    output: dict[str, Any]
    run: Run
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def writes(self) -> bool:
        return not self.read_only

    def input_schema(self, agents: list[str]) -> dict[str, Any]:
        agent: dict[str, Any] = {
            "type": "string",
            "description": "The agent whose memory to use (may be left out when this app was given one agent)",
        }
        if agents:
            agent["enum"] = agents
        return {
            "type": "object",
            "properties": {"agent": agent, **self.properties},
            "required": list(self.required),
            "additionalProperties": False,
        }

    def output_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "quoted_memory": {"type": "boolean"},
                "note": {"type": "string"},
                "agent": {"type": "string"},
                **self.output,
            },
        }


def _text(description: str, chars: int = QUERY_CHARS, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, "maxLength": chars, **extra}


_DATE = {"type": "string", "description": "A date, YYYY-MM-DD", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many results (default 10)"}
_PAGE = {"type": "integer", "minimum": 0, "maximum": 10_000, "description": "Result page, from 0"}
_REASON = _text("Why this should be remembered; the user reads it before accepting the change", REASON_CHARS)
_NULLABLE_TEXT = {"type": ["string", "null"]}
_HIT = {
    "type": "object",
    "properties": {
        "source": {"type": "string"},
        "ref": {"type": "string"},
        "date": _NULLABLE_TEXT,
        "text": {"type": "string"},
    },
    "required": ["source", "ref", "text"],
}
_HITS = {
    "hits": {"type": "array", "items": _HIT},
    "total": {"type": "integer"},
    "page": {"type": "integer"},
    "pages": {"type": "integer"},
}
_WRITE_RESULT = {
    "status": {"type": "string", "enum": ["applied", "pending"]},
    "approval": {"type": "integer"},
    "message": {"type": "string"},
    "label": {"type": "string"},
    "characters": {"type": "integer"},
    "limit": {"type": "integer"},
    "changes": {"type": "array", "items": {"type": "integer"}},
    "passages": {"type": "array", "items": {"type": "string"}},
}


def _agent(args: dict[str, Any]) -> str | None:
    return args.get("agent") or None


def _dates(args: dict[str, Any]) -> dict[str, Any]:
    start, end = parse_day(args.get("start_date"), "start_date"), parse_day(args.get("end_date"), "end_date")
    return {"start": start, "end": end}


def _search(c: Connections, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
    sources = tuple(args.get("sources") or SOURCES)
    return c.read(
        caller,
        _agent(args),
        "memory_search",
        lambda agent_id: c.access.search(
            agent_id, args["query"], sources=sources, limit=args.get("limit", 10), **_dates(args)
        ),
    )


def _conversation(c: Connections, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
    return c.read(
        caller,
        _agent(args),
        "conversation_search",
        lambda agent_id: c.access.conversation(
            agent_id, args.get("query"), limit=args.get("limit", 10), page=args.get("page", 0), **_dates(args)
        ),
    )


def _archival(c: Connections, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
    return c.read(
        caller,
        _agent(args),
        "archival_memory_search",
        lambda agent_id: c.access.archival(
            agent_id, args["query"], limit=args.get("limit", 10), page=args.get("page", 0), **_dates(args)
        ),
    )


def _blocks(c: Connections, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
    return c.read(caller, _agent(args), "core_memory_list", lambda agent_id: {"blocks": c.access.blocks(agent_id)})


def _block(c: Connections, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
    return c.read(caller, _agent(args), "core_memory_read", lambda agent_id: c.access.block(agent_id, args["label"]))


def _graph(c: Connections, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
    at = parse_day(args.get("at"), "at")
    return c.read(
        caller,
        _agent(args),
        "knowledge_graph_query",
        lambda agent_id: c.access.graph(agent_id, args["entity"], at=at, depth=args.get("depth", 1)),
    )


def _write(operation: str) -> Run:
    def run(c: Connections, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        arguments = {k: v for k, v in args.items() if k not in ("agent", "reason")}
        return c.write(caller, _agent(args), operation, arguments, args.get("reason", ""))

    return run


def tools(context_for_message: Run) -> list[McpTool]:
    """Every tool; ``context_for_message`` runs the recall preview (the composition root's)."""
    specs = [
        McpTool(
            "list_agents",
            "List agents",
            "The MemDesk agents whose memory this app may use, and whether it may change it.",
            {},
            (),
            {"agents": {"type": "array", "items": {"type": "object"}}},
            lambda c, caller, args: {"agents": c.visible_agents(caller)},
        ),
        McpTool(
            "memory_search",
            "Search memory",
            "Search everything the agent remembers at once: the conversation (recall memory), archival "
            "memory (notes and documents) and the knowledge graph, by words and meaning. Returns the best "
            "hits of each source interleaved, with dates and who said them.",
            {
                "query": _text("What to look for, in words"),
                "sources": {
                    "type": "array",
                    "items": {"type": "string", "enum": list(SOURCES)},
                    "description": "Which memories to search (default: all)",
                },
                "start_date": {**_DATE, "description": "Only memories from this day on"},
                "end_date": {**_DATE, "description": "Only memories up to this day"},
                "limit": _LIMIT,
            },
            ("query",),
            {"hits": {"type": "array", "items": _HIT}},
            _search,
        ),
        McpTool(
            "conversation_search",
            "Search the conversation",
            "Search the conversation history (recall memory) by words and meaning, optionally within a "
            "date range; with only dates, every message of those days, oldest first.",
            {
                "query": _text("What to look for (may be left out when dates are given)"),
                "start_date": {**_DATE, "description": "From this day (inclusive)"},
                "end_date": {**_DATE, "description": "Up to this day (inclusive)"},
                "limit": _LIMIT,
                "page": _PAGE,
            },
            (),
            _HITS,
            _conversation,
        ),
        McpTool(
            "core_memory_list",
            "List core memory",
            "The agent's core memory blocks (always in its context window): label, description, size, "
            "limit and whether read-only, without their text.",
            {},
            (),
            {"blocks": {"type": "array", "items": {"type": "object"}}},
            _blocks,
        ),
        McpTool(
            "core_memory_read",
            "Read a core memory block",
            "The text of one core memory block (for example human or persona).",
            {"label": _text("The block's label", LABEL_CHARS)},
            ("label",),
            {"label": {"type": "string"}, "value": {"type": "string"}, "limit": {"type": "integer"}},
            _block,
        ),
        McpTool(
            "core_memory_append",
            "Append to a core memory block",
            "Add a line to a core memory block (for example a fact about the user to the human block). "
            "The block's limit and read-only flag hold; say why in reason. Unless the user trusts this app, "
            "the change waits for their approval.",
            {
                "label": _text("The block's label", LABEL_CHARS),
                "content": _text("The text to add", CONTENT_CHARS),
                "reason": _REASON,
            },
            ("label", "content", "reason"),
            _WRITE_RESULT,
            _write("core_memory_append"),
            read_only=False,
            destructive=False,
            idempotent=False,
        ),
        McpTool(
            "core_memory_replace",
            "Replace text in a core memory block",
            "Replace an exact piece of a core memory block's text with new text (empty new text deletes "
            "it). The block's limit and read-only flag hold; say why in reason. Unless the user trusts "
            "this app, the change waits for their approval.",
            {
                "label": _text("The block's label", LABEL_CHARS),
                "old_content": _text("The exact text to replace", CONTENT_CHARS, minLength=1),
                "new_content": _text("The text to put in its place", CONTENT_CHARS),
                "reason": _REASON,
            },
            ("label", "old_content", "new_content", "reason"),
            _WRITE_RESULT,
            _write("core_memory_replace"),
            read_only=False,
            destructive=True,
            idempotent=False,
        ),
        McpTool(
            "archival_memory_insert",
            "Save to archival memory",
            "Store a passage in archival memory (long-term notes searched by meaning). Say why in reason. "
            "Unless the user trusts this app, it waits for their approval.",
            {
                "content": _text("The text to store", CONTENT_CHARS),
                "tags": {"type": "array", "items": _text("A tag", 50), "maxItems": 10},
                "reason": _REASON,
            },
            ("content", "reason"),
            _WRITE_RESULT,
            _write("archival_memory_insert"),
            read_only=False,
            destructive=False,
            idempotent=False,
        ),
        McpTool(
            "archival_memory_search",
            "Search archival memory",
            "Search archival memory (notes and documents) by meaning and words; each hit with its citation.",
            {
                "query": _text("What to look for"),
                "start_date": {**_DATE, "description": "Only passages stored from this day on"},
                "end_date": {**_DATE, "description": "Only passages stored up to this day"},
                "limit": _LIMIT,
                "page": _PAGE,
            },
            ("query",),
            _HITS,
            _archival,
        ),
        McpTool(
            "knowledge_graph_query",
            "Query the knowledge graph",
            "A person, place or thing from the agent's knowledge graph and the facts about it: those valid "
            "now, or on a given date (where someone lived then).",
            {
                "entity": _text("A name, for example Ann or Paris", 200),
                "at": {**_DATE, "description": "The facts valid on this day (default: now)"},
                "depth": {"type": "integer", "minimum": 1, "maximum": 2, "description": "Hops of facts (default 1)"},
            },
            ("entity",),
            {"entity": {"type": ["object", "null"]}, "facts": {"type": "array", "items": {"type": "object"}}},
            _graph,
        ),
        McpTool(
            "context_for_message",
            "Context for this message",
            "What MemDesk's automatic recall would place in the agent's context for this message: the "
            "memories it would show and the token budget it has for them (tokens estimated).",
            {"message": _text("The message, as the user would send it")},
            ("message",),
            {
                "status": {"type": "string"},
                "budget_tokens": {"type": "integer"},
                "memories": {"type": "array", "items": {"type": "object"}},
            },
            context_for_message,
        ),
    ]
    assert {t.name for t in specs if t.writes} == set(WRITES)
    return specs
