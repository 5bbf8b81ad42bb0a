"""Move an agent between stores: export it (memory blocks, full history, archival passages) as a
JSON-ready dict, import such a dict as a new agent, or duplicate it. (The conversation as a person
reads it, and its Markdown export: conversation_view.py.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from memdesk.core.base.clock import iso, parse_iso
from memdesk.core.base.errors import ConfigError
from memdesk.core.memory.agents import AgentRecord
from memdesk.core.memory.archival import NewPassage
from memdesk.core.memory.history import IMPORT, Cause
from memdesk.core.transfer.agent_config import imported_config
from memdesk.core.transfer.graph import export_graph, graph_problem, import_graph
from memdesk.core.transfer.imported_blocks import fit_block, fit_prompt

if TYPE_CHECKING:
    from memdesk.core.base.clock import Clock
    from memdesk.core.memory.agents import AgentStore
    from memdesk.core.memory.services import MemoryServices
    from memdesk.core.storage import Database


class Services(Protocol):
    """What transfer needs of the app's services (the core must not import the composition root)."""

    @property
    def agents(self) -> AgentStore: ...

    memory: MemoryServices
    clock: Clock
    db: Database


FORMAT = "memdesk-agent"
FORMAT_VERSION = 1
_PAGE = 500


# --- export / import -------------------------------------------------------------------------
def export_agent(services: Services, agent_id: int) -> dict[str, Any]:
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
            {
                "label": b.label,
                "value": b.value,
                "limit": b.limit,
                "description": b.description,
                "read_only": b.read_only,
            }
            for b in memory.core.blocks(agent_id)
        ],
        "messages": [
            {
                "id": m.id,
                "created_at": iso(m.created_at),
                "role": m.role,
                "kind": m.kind,
                "content": m.content,
                "search_text": m.search_text,
                "author": m.author,
                "function_name": m.function_name,
                "step_id": m.step_id,
            }
            for m in messages
        ],
        "passages": [
            {
                "id": p.id,
                "text": p.text,
                "created_at": iso(p.created_at),
                "tags": p.tags,
                "source": p.citation.label() or None,
            }
            for p in passages
        ],
        "graph": export_graph(services.db, agent_id),
    }


def _free_name(services: Services, wanted: str) -> str:
    if services.agents.find(wanted) is None:
        return wanted
    number = 2
    while services.agents.find(f"{wanted} ({number})") is not None:
        number += 1
    return f"{wanted} ({number})"


def import_agent(
    services: Services, data: dict[str, Any], name: str | None = None, *, fixups: list[str] | None = None
) -> AgentRecord:
    """Create a new agent from ``export_agent`` output. Without ``name`` the exported name is
    used, with a number added when an agent of that name exists. Passages are re-embedded with
    this store's embedder; a passage that came from a document keeps its source as a tag. Blocks
    are fitted to their limits (agent.imported_blocks); what that changed is added to ``fixups``."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError("This file is not a MemDesk agent export")
    if int(data.get("version", 0)) > FORMAT_VERSION:
        raise ConfigError(
            f"This agent was exported by a newer MemDesk (format {data.get('version')})",
            hint="upgrade MemDesk to import it",
        )
    problem = _problem(data)
    if problem is not None:
        raise ConfigError(f"This MemDesk export is damaged: {problem}", hint="nothing of it was imported")
    agent = data["agent"]
    memory = services.memory
    passages = data.get("passages", [])
    texts = [p["text"] for p in passages]
    vectors = memory.archival.embedder.embed(texts) if texts else None  # before the write lock is taken
    cause = Cause(note="imported from a MemDesk export")
    notes: list[str] = []
    owner = name.strip() if name else str(agent["name"])
    blocks = []
    for block in data.get("blocks", []):
        fitted = fit_block(block["label"], block["value"], block.get("limit"), owner=owner)
        notes += fitted.notes
        blocks.append((block, fitted))
    prompt = fit_prompt(agent["system_prompt"], [(b["label"], f.value) for b, f in blocks], owner=owner)
    notes += prompt.notes
    config, config_notes = imported_config(agent.get("config"), owner)
    notes += config_notes
    if fixups is not None:
        fixups.extend(notes)
    with services.db.transaction():
        record = services.agents.create_empty(
            name.strip() if name else _free_name(services, agent["name"]),
            system_prompt=prompt.system,
            created_at=parse_iso(agent["created_at"]) if agent.get("created_at") else None,
        )
        for (block, fitted), value in zip(blocks, prompt.values, strict=True):
            memory.core.create(
                record.id,
                block["label"],
                value,
                limit=fitted.limit,
                description=block.get("description") or "",
                read_only=bool(block.get("read_only", False)),
                source=IMPORT,
                cause=cause,
            )
        new_ids: dict[int, int] = {}
        context_start_id = 0
        start_index = int(agent.get("context_start_index", 0))
        for index, message in enumerate(data.get("messages", [])):
            added = memory.recall.add(
                record.id,
                role=message["role"],
                kind=message["kind"],
                content=message["content"],
                created_at=parse_iso(message["created_at"]),
                search_text=message.get("search_text") or "",
                author=message.get("author"),
                function_name=message.get("function_name"),
                step_id=new_ids.get(message["step_id"]) if message.get("step_id") is not None else None,
            )
            new_ids[message["id"]] = added.id
            if index == start_index:
                context_start_id = added.id
        if start_index >= len(data.get("messages", [])) and new_ids:
            context_start_id = max(new_ids.values()) + 1
        services.agents.update(
            record.id,
            summary=agent.get("summary") or "",
            context_start_id=context_start_id,
            evicted_count=int(agent.get("evicted_count", 0)),
            config=config,
        )
        passage_ids = memory.archival.add(
            record.id,
            [
                NewPassage(
                    p["text"],
                    parse_iso(p["created_at"]),
                    list(p.get("tags", [])) + ([f"source: {p['source']}"] if p.get("source") else []),
                )
                for p in passages
            ],
            vectors,
            source=IMPORT,
            cause=cause,
        )
        # The file's passage ids, in order, map to the new ones (the graph's mentions cite them).
        passage_map = {
            int(p["id"]): new for p, new in zip(passages, passage_ids, strict=True) if p.get("id") is not None
        }
        import_graph(services.db, record.id, data.get("graph"), message_ids=new_ids, passage_ids=passage_map)
    return services.agents.get(record.id)


#: The fields stored as they are, by where they are: (name, required); the rest is converted.
_TEXT_FIELDS = {
    "agent": (("name", True), ("system_prompt", True), ("summary", False)),
    "blocks": (("label", True), ("value", True), ("description", False)),
    "messages": (
        ("role", True),
        ("kind", True),
        ("content", True),
        ("search_text", False),
        ("author", False),
        ("function_name", False),
    ),
    "passages": (("text", True),),
}


def _problem(data: dict[str, Any]) -> str | None:
    """What in an export would fail halfway or store a value of the wrong type (None: nothing)."""
    agent = data.get("agent")
    if not isinstance(agent, dict):
        return "it holds no agent"
    sections: dict[str, list] = {"agent": [agent]}
    for section in ("blocks", "messages", "passages"):
        rows = data.get(section, [])
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            return f"its {section} are not a list of objects"
        sections[section] = rows
    for section, fields in _TEXT_FIELDS.items():
        for number, row in enumerate(sections[section], start=1):
            for name, required in fields:
                value = row.get(name)
                if (value is not None or required) and not isinstance(value, str):
                    return f"{section} entry {number} has no text as its {name}"
    return graph_problem(data.get("graph"))


def duplicate_agent(services: Services, agent_id: int, name: str) -> AgentRecord:
    return import_agent(services, export_agent(services, agent_id), name=name)
