"""Move an agent between stores: export it (memory blocks, full history, archival passages) as a
JSON-ready dict, import such a dict as a new agent, and render a conversation as Markdown.

Also turns stored messages back into what a person reads (``conversation_entries``): the window's
chat view and the Markdown export share it, so both show the same conversation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from desktop.core.agent import events
from desktop.core.agent.agents import AgentRecord
from desktop.core.agent.auto_recall import memories_text
from desktop.core.agent.imported_blocks import fit_block
from desktop.core.clock import iso, parse_iso
from desktop.core.graph.transfer import export_graph, import_graph
from desktop.core.memory.archival import NewPassage
from desktop.core.memory.history import IMPORT, Cause
from desktop.core.memory.recall import Message
from desktop.errors import ConfigError

if TYPE_CHECKING:
    from desktop.core.agent.agents import AgentStore
    from desktop.core.agent.loop import MemoryServices
    from desktop.core.clock import Clock
    from desktop.core.storage import Database


class Services(Protocol):
    """What transfer needs of the app's services (the core must not import the composition root)."""

    @property
    def agents(self) -> "AgentStore": ...

    memory: "MemoryServices"
    clock: "Clock"
    db: "Database"

FORMAT = "memdesk-agent"
FORMAT_VERSION = 1
_PAGE = 500


# --- reading a conversation ------------------------------------------------------------------
@dataclass
class Entry:
    """One thing a person sees in the conversation.

    ``kind``: "user" (their message), "agent" (a send_message), "thought" (inner monologue),
    "call" (any other function call, with its result) or "event" (login, heartbeat, alert)."""

    kind: str
    text: str
    at: datetime
    function: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    result: str = ""
    ok: bool = True
    message_id: int | None = None  # the stored message it shows (a call's result folds into the call)

    @property
    def detail(self) -> bool:
        """Hidden unless the user asks to see the agent's inner workings."""
        return self.kind in ("thought", "call", "memories")


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None


def _event_text(message: Message) -> str:
    data = _load(message.content)
    if not isinstance(data, dict):
        return message.content
    text = str(data.get("reason") or data.get("message") or data.get("type") or message.kind)
    if message.kind == "login":
        text = f"login (last login: {data.get('last_login', 'unknown')})"
    return text.replace(events.HIDDEN, "").strip()


def conversation_entries(messages: list[Message]) -> list[Entry]:
    entries: list[Entry] = []
    calls: dict[int, Entry] = {}
    for message in messages:
        if message.kind == "user_message":
            data = _load(message.content)
            text = data.get("message", message.content) if isinstance(data, dict) else message.content
            entries.append(Entry("user", str(text), message.created_at, message_id=message.id))
        elif message.kind == "assistant_call":
            data = _load(message.content)
            params = data.get("params", {}) if isinstance(data, dict) else {}
            params = dict(params) if isinstance(params, dict) else {}
            thoughts = str(params.pop("inner_thoughts", "") or "")
            params.pop("request_heartbeat", None)
            function = message.function_name or (data.get("function", "") if isinstance(data, dict) else "")
            if thoughts:
                entries.append(Entry("thought", thoughts, message.created_at, message_id=message.id))
            if function == "send_message" and isinstance(params.get("message"), str) and message.search_text:
                entries.append(Entry("agent", params["message"], message.created_at, function=function, message_id=message.id))
            else:
                call = Entry(
                    "call", message.content if data is None else "", message.created_at, function=str(function), arguments=params,
                    message_id=message.id,
                )
                calls[message.id] = call
                entries.append(call)
        elif message.kind == "function_result":
            data = _load(message.content)
            call = calls.get(message.step_id or -1)
            if call is not None and isinstance(data, dict):
                call.result = str(data.get("message", ""))
                call.ok = data.get("status") == "OK"
        elif message.kind == "memories":  # automatic recall: what the reply that follows had in front of it
            data = _load(message.content)
            lines = data.get("memories", []) if isinstance(data, dict) else []
            entries.append(Entry("memories", memories_text(lines), message.created_at, message_id=message.id))
        else:
            entries.append(Entry("event", f"{message.kind}: {_event_text(message)}", message.created_at, message_id=message.id))
    return entries


def conversation_markdown(services: "Services", agent_id: int, *, include_details: bool = False) -> str:
    record = services.agents.get(agent_id)
    lines = [f"# Conversation with {record.name}", ""]
    for entry in conversation_entries(services.memory.recall.all(agent_id)):
        if entry.detail and not include_details:
            continue
        stamp = entry.at.strftime("%Y-%m-%d %H:%M")
        if entry.kind == "user":
            lines += [f"**You** · {stamp}", "", entry.text, ""]
        elif entry.kind == "agent":
            lines += [f"**{record.name}** · {stamp}", "", entry.text, ""]
        elif entry.kind == "thought":
            lines += [f"> *thinking:* {entry.text}", ""]
        elif entry.kind == "call":
            status = "ok" if entry.ok else "failed"
            lines += [f"> `{entry.function}({json.dumps(entry.arguments, ensure_ascii=False)})` → {status}: {entry.result}", ""]
        else:
            lines += [f"*{entry.text}* · {stamp}", ""]
    return "\n".join(lines).rstrip() + "\n"


# --- export / import -------------------------------------------------------------------------
def export_agent(services: "Services", agent_id: int) -> dict[str, Any]:
    record = services.agents.get(agent_id)
    memory = services.memory
    messages = memory.recall.all(agent_id)
    passages = []
    offset = 0
    while True:
        page = memory.archival.list(agent_id, offset=offset, limit=_PAGE)
        passages.extend(page)
        if len(page) < _PAGE:
            break
        offset += _PAGE
    passages.reverse()  # list() is newest first; keep insertion order in the file
    # The context boundary is stored as an index because message ids change on import.
    context_start = next((i for i, m in enumerate(messages) if m.id >= record.context_start_id), len(messages))
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "exported_at": iso(services.clock.now()),
        "agent": {
            "name": record.name,
            "created_at": iso(record.created_at),
            "system_prompt": record.system_prompt,
            "summary": record.summary,
            "context_start_index": context_start,
            "evicted_count": record.evicted_count,
            "config": record.config,
        },
        "blocks": [
            {"label": b.label, "value": b.value, "limit": b.limit, "description": b.description, "read_only": b.read_only}
            for b in memory.core.blocks(agent_id)
        ],
        "messages": [
            {
                "id": m.id, "created_at": iso(m.created_at), "role": m.role, "kind": m.kind, "content": m.content,
                "search_text": m.search_text, "author": m.author, "function_name": m.function_name, "step_id": m.step_id,
            }
            for m in messages
        ],
        "passages": [
            {"id": p.id, "text": p.text, "created_at": iso(p.created_at), "tags": p.tags, "source": p.citation.label() or None}
            for p in passages
        ],
        "graph": export_graph(services.db, agent_id),
    }


def _free_name(services: "Services", wanted: str) -> str:
    if services.agents.find(wanted) is None:
        return wanted
    number = 2
    while services.agents.find(f"{wanted} ({number})") is not None:
        number += 1
    return f"{wanted} ({number})"


def import_agent(services: "Services", data: dict[str, Any], name: str | None = None, *, fixups: list[str] | None = None) -> AgentRecord:
    """Create a new agent from ``export_agent`` output. Without ``name`` the exported name is
    used, with a number added when an agent of that name exists. Passages are re-embedded with
    this store's embedder; a passage that came from a document keeps its source as a tag. Blocks
    are fitted to their limits (agent.imported_blocks); what that changed is added to ``fixups``."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError("This file is not a MemDesk agent export")
    if int(data.get("version", 0)) > FORMAT_VERSION:
        raise ConfigError(f"This agent was exported by a newer MemDesk (format {data.get('version')})", hint="upgrade MemDesk to import it")
    agent = data["agent"]
    memory = services.memory
    passages = data.get("passages", [])
    texts = [p["text"] for p in passages]
    vectors = memory.archival.embedder.embed(texts) if texts else None  # before the write lock is taken
    cause = Cause(note="imported from a MemDesk export")
    with services.db.transaction():
        record = services.agents.create_empty(
            name.strip() if name else _free_name(services, agent["name"]), system_prompt=agent["system_prompt"],
            created_at=parse_iso(agent["created_at"]) if agent.get("created_at") else None,
        )
        for block in data.get("blocks", []):
            fitted = fit_block(block["label"], block["value"], block.get("limit"), owner=record.name)
            if fixups is not None:
                fixups.extend(fitted.notes)
            memory.core.create(
                record.id, block["label"], fitted.value, limit=fitted.limit,
                description=block.get("description", ""), read_only=bool(block.get("read_only", False)), source=IMPORT, cause=cause,
            )
        new_ids: dict[int, int] = {}
        context_start_id = 0
        start_index = int(agent.get("context_start_index", 0))
        for index, message in enumerate(data.get("messages", [])):
            added = memory.recall.add(
                record.id, role=message["role"], kind=message["kind"], content=message["content"],
                created_at=parse_iso(message["created_at"]), search_text=message.get("search_text", ""),
                author=message.get("author"), function_name=message.get("function_name"),
                step_id=new_ids.get(message["step_id"]) if message.get("step_id") is not None else None,
            )
            new_ids[message["id"]] = added.id
            if index == start_index:
                context_start_id = added.id
        if start_index >= len(data.get("messages", [])) and new_ids:
            context_start_id = max(new_ids.values()) + 1
        services.agents.update(
            record.id, summary=agent.get("summary", ""), context_start_id=context_start_id,
            evicted_count=int(agent.get("evicted_count", 0)), config=agent.get("config", {}),
        )
        passage_ids = memory.archival.add(
            record.id,
            [
                NewPassage(p["text"], parse_iso(p["created_at"]), list(p.get("tags", [])) + ([f"source: {p['source']}"] if p.get("source") else []))
                for p in passages
            ],
            vectors,
            source=IMPORT,
            cause=cause,
        )
        # The file's passage ids, in order, map to the new ones (the graph's mentions cite them).
        passage_map = {int(p["id"]): new for p, new in zip(passages, passage_ids) if p.get("id") is not None}
        import_graph(services.db, record.id, data.get("graph"), message_ids=new_ids, passage_ids=passage_map)
    return services.agents.get(record.id)


def duplicate_agent(services: "Services", agent_id: int, name: str) -> AgentRecord:
    return import_agent(services, export_agent(services, agent_id), name=name)
