"""Writing a planned import: each agent, its messages, history, blocks, documents, passages, tools
and graph, inside the one transaction ``import_agent_file`` holds."""

from __future__ import annotations

import json

from memdesk.core.documents.catalog import restore_document
from memdesk.core.memory.archival import NewPassage
from memdesk.core.memory.history import IMPORT, Cause
from memdesk.core.tools.imported import ImportedTools
from memdesk.core.transfer.agentfile.conversations import import_conversations
from memdesk.core.transfer.agentfile.model import AgentFileServices, GraphTransfer
from memdesk.core.transfer.agentfile.plan import AgentPlan, as_dict, text_of


def write_agent(
    services: AgentFileServices, plan: AgentPlan, vectors, cause: Cause, graph: GraphTransfer | None
) -> None:
    memory = services.memory
    record = services.agents.create_empty(plan.name, system_prompt=plan.system_prompt, created_at=plan.created_at)
    plan.report.agent_id = record.id
    # Messages first: the history and the graph name them.
    stored: dict[str, int] = {}
    for message in plan.messages:
        step = stored.get(message.call_ref) if message.call_ref else None
        added = memory.recall.add(
            record.id,
            role=message.role,
            kind=message.kind,
            content=message.content,
            created_at=message.created_at,
            search_text=message.search_text,
            author=message.author,
            function_name=message.function_name,
            step_id=step,
        )
        stored[message.ref] = added.id
    chat = dict(stored)  # where the context window starts is a message of the agent's own chat
    import_conversations(memory, record.id, plan.imported, stored)
    # The carried history comes before this store's own record of the import.
    restored: list[tuple[int, dict]] = []
    for entry in plan.history:
        reverts = entry.get("reverts")
        reverted = restored[reverts][0] if isinstance(reverts, int) and 0 <= reverts < len(restored) else None
        restored.append(
            (memory.core.history.restore(record.id, entry, target_id=None, message_ids=stored, reverts=reverted), entry)
        )
    plan.report.history = len(restored)
    for block in plan.blocks:
        memory.core.create(
            record.id,
            block.label,
            block.value,
            limit=block.limit,
            description=block.description,
            read_only=block.read_only,
            source=IMPORT,
            cause=cause,
        )
    document_ids = {d["id"]: restore_document(services.db, record.id, d) for d in plan.documents}
    passages = [
        NewPassage(**{**p.passage.__dict__, "document_id": document_ids.get(p.document_ref)})
        if p.document_ref
        else p.passage
        for p in plan.passages
    ]
    passage_ids = memory.archival.add(record.id, passages, vectors, source=IMPORT, cause=cause) if passages else []
    _link_restored_history(services, record.id, restored, passage_ids)
    tools = ImportedTools(services.db, services.clock)
    for tool in plan.tools:
        schema = as_dict(tool.get("json_schema"))
        tools.add(
            record.id,
            name=text_of(tool.get("name")),
            description=text_of(tool.get("description")),
            source_code=text_of(tool.get("source_code")),
            json_schema=schema,
            origin="letta",
            original={k: v for k, v in tool.items() if k != "id"},
        )
    if plan.extras is not None:
        services.db.execute(
            "INSERT INTO agent_file_extras(agent_id, format, data) VALUES (?, 'letta', ?)",
            (record.id, json.dumps(plan.extras, ensure_ascii=False)),
        )
    imported = (
        graph.import_graph(services.db, record.id, plan.graph, stored, passage_ids)
        if plan.graph is not None and graph is not None
        else None
    )
    if imported is not None:
        plan.report.graph = imported.summary
    for change_id, entry in restored:
        if str(entry.get("kind", "")).startswith("graph"):
            # Carried graph changes point at the new rows, or at none (listed, not revertible).
            moved = (
                imported.change(
                    entry["kind"], entry.get("graph_target"), (entry.get("before_meta"), entry.get("after_meta"))
                )
                if imported
                else None
            )
            memory.core.history.relink(change_id, *(moved or (None, None, None)))
    refs = [m.ref for m in plan.messages]
    if plan.context_start_ref is None:
        context_start = 0
        evicted = 0
    elif plan.context_start_ref == "":
        context_start = (max(chat.values()) + 1) if chat else 0
        evicted = len(refs)
    else:
        context_start = stored[plan.context_start_ref]
        evicted = refs.index(plan.context_start_ref)
    services.agents.update(
        record.id,
        summary=plan.summary,
        context_start_id=context_start,
        evicted_count=plan.evicted_count if plan.evicted_count is not None else evicted,
        config=plan.config,
    )


def _link_restored_history(
    services: AgentFileServices, agent_id: int, restored: list[tuple[int, dict]], passage_ids: list[int]
) -> None:
    """Point carried history entries at this store's rows (blocks by label, passages by position)."""
    core = services.memory.core
    for change_id, entry in restored:
        target = None
        if entry.get("kind") == "block":
            block = core.get(agent_id, text_of(entry.get("label")))
            target = block.id if block else None
        elif (
            entry.get("kind") == "passage"
            and isinstance(entry.get("passage"), int)
            and 0 <= entry["passage"] < len(passage_ids)
        ):
            target = passage_ids[entry["passage"]]
        if target is not None:
            core.history.retarget(change_id, target)
