"""MemDesk's extension of a Letta agent file, both ways: what Letta has no place for (the exact
messages the model saw, archival passages and their documents, the memory history, the knowledge
graph) goes under the top-level ``"memdesk"`` key on export, and comes back exactly on import.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from memdesk.core.base.clock import iso
from memdesk.core.base.errors import AgentFileError
from memdesk.core.memory.archival import NewPassage
from memdesk.core.memory.history import export_change
from memdesk.core.transfer.agent_config import imported_config
from memdesk.core.transfer.agentfile import letta
from memdesk.core.transfer.agentfile.checks import (
    DAMAGED_HINT,
    document_problem,
    number,
    plan_history,
    ref_of,
)
from memdesk.core.transfer.agentfile.conversations import export_conversations
from memdesk.core.transfer.agentfile.letta import Incoming
from memdesk.core.transfer.agentfile.model import (
    EXTENSION_FORMAT,
    EXTENSION_KEY,
    EXTENSION_VERSION,
    AgentFileServices,
    GraphTransfer,
)
from memdesk.core.transfer.agentfile.plan import (
    AgentPlan,
    PassagePlan,
    as_dict,
    as_list,
    count_messages,
    text_of,
    when,
)
from memdesk.core.transfer.agentfile.summary import ImportSummary
from memdesk.core.transfer.graph import graph_problem

if TYPE_CHECKING:
    from memdesk.core.memory.recall import Message


_PAGE = 500


# --- export ---------------------------------------------------------------------------------------
def agent_extension(
    services: AgentFileServices,
    record,
    details: dict[str, Any],
    refs: dict[int, str],
    summary_ref: str | None,
    context_start_ref: str | None,
    graph: GraphTransfer | None,
) -> dict[str, Any]:
    """One agent's part of the section: ``details`` of its messages by their id in the file
    (``message_detail``), ``refs`` their ids by store id."""
    memory = services.memory
    agent_id = record.id
    passages = _all_passages(services, agent_id)
    documents, document_refs = _documents(services, agent_id)
    passage_refs = {passage_id: index for index, (passage_id, _p) in enumerate(passages)}
    # Before the history and the graph: they cite imported messages by these ids too.
    imported = export_conversations(services.db, agent_id, refs)
    history = list(reversed(memory.core.history.for_agent(agent_id, limit=10**9)))
    return {
        "created_at": iso(record.created_at),
        "summary": record.summary,
        "summary_message": summary_ref,
        "context_start": context_start_ref,
        "evicted_count": record.evicted_count,
        "config": record.config,
        "messages": details,
        "imported_conversations": imported,
        "documents": documents,
        "passages": [_passage_entry(p, document_refs) for _id, p in passages],
        "history": [
            _history_entry(c, refs, passage_refs, {c.id: i for i, c in enumerate(history)}, graph) for c in history
        ],
        "graph": graph.export_graph(services.db, agent_id, refs, passage_refs) if graph is not None else None,
    }


def _all_passages(services: AgentFileServices, agent_id: int) -> list[tuple[int, NewPassage]]:
    passages: list[tuple[int, NewPassage]] = []
    while True:
        page = services.memory.archival.stored(agent_id, after_id=passages[-1][0] if passages else 0, limit=_PAGE)
        passages.extend(page)
        if len(page) < _PAGE:
            return passages


def extension_section(agents: dict[str, Any]) -> dict[str, Any]:
    """The ``"memdesk"`` section of a file holding ``agents`` (each ``agent_extension``'s result, by
    the agent's id in the file)."""
    return {"format": EXTENSION_FORMAT, "version": EXTENSION_VERSION, "agents": agents}


def message_detail(message: Message, converted: dict[str, Any], refs: dict[int, str]) -> dict[str, Any]:
    """What the Letta message does not say exactly (the round trip restores it from here)."""
    detail: dict[str, Any] = {"kind": message.kind}
    if message.search_text:
        detail["search_text"] = message.search_text
    if message.author:
        detail["author"] = message.author
    if message.function_name:
        detail["function_name"] = message.function_name
    if message.step_id is not None:
        detail["step"] = refs.get(message.step_id)
    if letta.letta_text(converted) != message.content:
        detail["content"] = message.content
    return detail


def _documents(services: AgentFileServices, agent_id: int) -> tuple[list[dict[str, Any]], dict[int, str]]:
    rows = services.db.query(
        "SELECT id, path, title, content_hash, size_bytes, mime, status, error, chunk_count, created_at, updated_at"
        " FROM documents WHERE agent_id = ? ORDER BY id",
        (agent_id,),
    )
    documents, refs = [], {}
    for index, row in enumerate(rows):
        ref = f"document-{index}"
        refs[row[0]] = ref
        documents.append(
            {
                "id": ref,
                "path": row[1],
                "title": row[2],
                "content_hash": row[3],
                "size_bytes": row[4],
                "mime": row[5],
                "status": row[6],
                "error": row[7],
                "chunk_count": row[8],
                "created_at": row[9],
                "updated_at": row[10],
            }
        )
    return documents, refs


def _passage_entry(passage: NewPassage, document_refs: dict[int, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"text": passage.text, "created_at": iso(passage.created_at), "tags": passage.tags}
    if passage.document_id is not None:
        entry["document"] = document_refs.get(passage.document_id)
    for name in ("chunk_index", "page", "section", "char_start", "char_end"):
        value = getattr(passage, name)
        if value is not None:
            entry[name] = value
    return entry


def _history_entry(
    change,
    message_refs: dict[int, str],
    passage_refs: dict[int, int],
    change_refs: dict[int, int],
    graph: GraphTransfer | None,
) -> dict[str, Any]:
    entry = export_change(change, message_refs, change_refs)
    if change.kind == "passage" and change.target_id in passage_refs:
        entry["passage"] = passage_refs[change.target_id]
    if change.kind.startswith("graph") and graph is not None:
        # The row ids are the graph section's own; the import moves them to the new store's.
        entry["graph_target"] = change.target_id
        entry["before_meta"] = graph.export_rows(change.before_meta, message_refs, passage_refs)
        entry["after_meta"] = graph.export_rows(change.after_meta, message_refs, passage_refs)
    return entry


# --- import ---------------------------------------------------------------------------------------
def read_extension(data: dict[str, Any], summary: ImportSummary) -> dict[str, Any] | None:
    extension = data.get(EXTENSION_KEY)
    if extension is None:
        return None
    if not isinstance(extension, dict) or extension.get("format") != EXTENSION_FORMAT:
        summary.fix(f"The file's '{EXTENSION_KEY}' section is not MemDesk's: it was ignored")
        return None
    version = extension.get("version")
    if not isinstance(version, int) or version > EXTENSION_VERSION:
        raise AgentFileError(
            f"This agent file was written by a newer MemDesk (extension version {version};"
            f" this one reads up to {EXTENSION_VERSION})",
            hint="upgrade MemDesk to import it",
        )
    agents = extension.get("agents")
    return agents if isinstance(agents, dict) else {}


def plan_memdesk_messages(plan: AgentPlan, agent: dict, mine: dict, summary: ImportSummary) -> None:
    """A MemDesk export: the extension says exactly what each message was."""
    details = as_dict(mine.get("messages"))
    skip = {ref_of(mine.get("summary_message"))}
    for message in as_list(agent.get("messages")):
        if not isinstance(message, dict):
            continue
        ref = text_of(message.get("id"))
        detail = details.get(ref)
        if detail is None or ref in skip:
            continue  # the system message and the summary's stand-in
        at = when(message.get("created_at"))
        if at is None:
            raise AgentFileError(f"Message {ref} has no valid created_at: the file is damaged")
        if not isinstance(detail, dict):
            raise AgentFileError(f"Message {ref}'s details in the MemDesk section are damaged", hint=DAMAGED_HINT)
        content = detail["content"] if "content" in detail else letta.letta_text(message)
        if not isinstance(content, str):
            raise AgentFileError(f"Message {ref}'s content is not text: the file is damaged", hint=DAMAGED_HINT)
        role = "assistant" if detail.get("kind") == "assistant_call" else "user"
        plan.messages.append(
            Incoming(
                ref,
                role,
                text_of(detail.get("kind")) or "user_message",
                content,
                at,
                search_text=text_of(detail.get("search_text")),
                author=_text_or_none(detail.get("author")),
                function_name=_text_or_none(detail.get("function_name")),
                call_ref=_text_or_none(detail.get("step")),
            )
        )
    start = mine.get("context_start")
    if start is not None and start != "" and start not in {m.ref for m in plan.messages}:
        summary.fix(
            f"The context of {plan.name!r} started at a message the file does not hold: all of it is in context"
        )
        start = None
    plan.context_start_ref = start
    if plan.context_start_ref is None and plan.messages:
        plan.context_start_ref = ""  # every message was evicted
    plan.summary = text_of(mine.get("summary"))
    plan.evicted_count = number(mine.get("evicted_count"), minimum=0)
    count_messages(plan)


def plan_memdesk_extras(plan: AgentPlan, mine: dict, summary: ImportSummary) -> None:
    plan.config, notes = imported_config(mine.get("config"), plan.name)
    for note in notes:
        summary.fix(note)
    plan.documents = []
    for number_, document in enumerate(as_list(mine.get("documents")), start=1):
        problem = document_problem(document)
        if problem is None:
            plan.documents.append(document)
        else:
            summary.fix(f"Document {number_} of {plan.name!r} {problem}: not imported (its passages are)")
    known_documents = {d.get("id") for d in plan.documents}
    for entry in as_list(mine.get("passages")):
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str) or not entry["text"].strip():
            summary.fix(f"An archival passage of {plan.name!r} had no text: skipped")
            continue
        at = when(entry.get("created_at")) or plan.created_at or datetime.now().astimezone()
        document_ref = entry.get("document") if ref_of(entry.get("document")) in known_documents else None
        tags = [str(t) for t in as_list(entry.get("tags"))]
        plan.passages.append(
            PassagePlan(
                NewPassage(
                    entry["text"],
                    at,
                    tags,
                    None,
                    number(entry.get("chunk_index")),
                    number(entry.get("page")),
                    _text_or_none(entry.get("section")),
                    number(entry.get("char_start")),
                    number(entry.get("char_end")),
                ),
                document_ref,
            )
        )
    plan.history = plan_history(as_list(mine.get("history")), plan.name, summary)
    problem = graph_problem(mine.get("graph"))
    if problem is not None:
        raise AgentFileError(
            f"The knowledge graph of {plan.name!r} in the file is damaged: {problem}", hint=DAMAGED_HINT
        )
    plan.graph = mine.get("graph")
    plan.imported = as_list(mine.get("imported_conversations"))
    plan.report.passages = len(plan.passages)
    plan.report.documents = len(plan.documents)


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
