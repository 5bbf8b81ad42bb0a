"""Import a Letta agent file (.af) as new MemDesk agents.

Two phases: ``plan_import`` reads and checks the whole file without writing anything (bad input
becomes an AgentFileError, or a fix-up the summary reports), then ``import_agent_file`` embeds the
passages and writes every agent in one transaction: a failure leaves no half-imported agent.

A file MemDesk exported carries the ``"memdesk"`` extension; its details (message kinds, the
exact text the model saw, passages, documents, history, graph) are restored exactly. A file from
Letta is mapped: messages to MemDesk's events and calls, blocks as they are, Python tools stored
disabled; what has no MemDesk equivalent is listed in the summary.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from memdesk.core.base.errors import AgentExistsError, AgentFileError
from memdesk.core.memory.core_memory import valid_label
from memdesk.core.memory.history import Cause
from memdesk.core.tools.builtin import builtin_tools
from memdesk.core.tools.imported import ImportedTool, runnable_problem
from memdesk.core.transfer.agentfile import letta
from memdesk.core.transfer.agentfile.checks import DAMAGED_HINT, MALFORMED, damaged, ref_of, shown
from memdesk.core.transfer.agentfile.extension import plan_memdesk_extras, plan_memdesk_messages, read_extension
from memdesk.core.transfer.agentfile.letta_import import (
    plan_letta_leftovers,
    plan_letta_messages,
    plan_mcp_servers,
    report_file_leftovers,
)
from memdesk.core.transfer.agentfile.model import AgentFileServices, GraphTransfer
from memdesk.core.transfer.agentfile.plan import AgentPlan, BlockPlan, ImportPlan, as_dict, as_list, text_of, when
from memdesk.core.transfer.agentfile.reading import LETTA, LETTA_REQUIRED, detect_format
from memdesk.core.transfer.agentfile.summary import ImportedAgent, ImportSummary
from memdesk.core.transfer.agentfile.writing import write_agent
from memdesk.core.transfer.imported_blocks import fit_block, fit_prompt


def import_agent_file(
    services: AgentFileServices,
    data: dict[str, Any],
    *,
    name: str | None = None,
    fixups: list[str] | None = None,
    graph: GraphTransfer | None = None,
    origin: str = "",
) -> ImportSummary:
    """Import every agent in ``data`` (a parsed .af document) in one transaction. A file the
    planning could not foresee every shape of still fails as an AgentFileError, writing nothing."""
    try:
        return _import(services, data, name=name, fixups=fixups, graph=graph, origin=origin)
    except MALFORMED as error:
        raise damaged(error, origin or "The agent file") from error


def _import(
    services: AgentFileServices,
    data: dict[str, Any],
    *,
    name: str | None,
    fixups: list[str] | None,
    graph: GraphTransfer | None,
    origin: str,
) -> ImportSummary:
    plan = plan_import(services, data, name=name, fixups=fixups)
    for agent in plan.agents:
        if agent.graph is not None and graph is None:
            plan.summary.skip(f"The knowledge graph of {agent.name!r}: this MemDesk cannot import knowledge graphs yet")
    embedder = services.memory.archival.embedder
    texts = [p.passage.text for agent in plan.agents for p in agent.passages]
    vectors = embedder.embed(texts) if texts else None  # slow work before the write lock is taken
    cause = Cause(note=f"imported from {origin}" if origin else "imported from an agent file")
    offset = 0
    with services.db.transaction():
        for agent in plan.agents:
            count = len(agent.passages)
            write_agent(
                services, agent, vectors[offset : offset + count] if vectors is not None else None, cause, graph
            )
            offset += count
    plan.summary.agents = [agent.report for agent in plan.agents]
    return plan.summary


# --- planning: what every file shares (the Letta mapping is letta_import.py's, MemDesk's extension extension.py's)
def plan_import(
    services: AgentFileServices, data: dict[str, Any], *, name: str | None = None, fixups: list[str] | None = None
) -> ImportPlan:
    """Check and map the whole file; nothing is written."""
    if detect_format(data) != LETTA:
        raise AgentFileError(
            "This is a MemDesk JSON export, not a Letta agent file",
            hint="import it with the same command: it is detected",
        )
    summary = ImportSummary(LETTA)
    for item in fixups or []:
        summary.fix(item)
    extension = read_extension(data, summary)
    _check_schema(data, summary)
    agents = [a for a in as_list(data.get("agents")) if isinstance(a, dict)]
    if len(agents) != len(as_list(data.get("agents"))):
        summary.fix("Entries of 'agents' that were not objects were skipped")
    if not agents:
        raise AgentFileError("The agent file holds no agents")
    if name is not None and len(agents) > 1:
        raise AgentFileError(f"The file holds {len(agents)} agents; a name can be given only when it holds one")
    blocks = {ref_of(b.get("id")): b for b in as_list(data.get("blocks")) if isinstance(b, dict)}
    tools = {ref_of(t.get("id")): t for t in as_list(data.get("tools")) if isinstance(t, dict)}
    block_users = Counter(
        ref for a in agents for ref in {ref_of(r) for r in as_list(a.get("block_ids"))} if ref is not None
    )
    builtin_names = {tool.name for tool in builtin_tools()}
    taken: set[str] = set()
    plans = []
    for index, agent in enumerate(agents):
        ref = text_of(agent.get("id")) or letta.file_id(letta.AGENT, index)
        wanted = text_of(agent.get("name")).strip()
        if not wanted:
            wanted = f"Imported agent {index + 1}"
            summary.fix(f"Agent {ref} had no name: imported as {wanted!r}")
        if name is not None:
            chosen = name.strip()
            if services.agents.find(chosen) is not None:
                raise AgentExistsError(f"An agent named {chosen!r} already exists")
        else:
            chosen = _free_name(services, wanted, taken)
            if chosen != wanted:
                why = (
                    "another agent in the file has that name"
                    if wanted in taken
                    else "an agent of that name already exists here"
                )
                summary.fix(f"Agent {wanted!r} was imported as {chosen!r} ({why})")
        taken.add(chosen)
        system_prompt = agent.get("system")
        if not isinstance(system_prompt, str) or not system_prompt.strip():
            system_prompt = getattr(getattr(services, "prompts", None), "system", "") or ""
            summary.fix(f"Agent {wanted!r} had no system prompt: MemDesk's default prompt was used")
        mine = extension.get(ref) if extension else None
        if mine is not None and not isinstance(mine, dict):
            raise AgentFileError(f"The file's MemDesk section for {wanted!r} is damaged", hint=DAMAGED_HINT)
        plan = AgentPlan(ref, chosen, system_prompt, when(mine.get("created_at")) if mine else None)
        plan.report = ImportedAgent(chosen, file_name=wanted)
        _plan_blocks(plan, agent, blocks, block_users, summary)
        _fit_prompt(plan, summary)
        _plan_tools(plan, agent, tools, builtin_names, summary, from_memdesk=mine is not None)
        if mine is not None:
            plan_memdesk_messages(plan, agent, mine, summary)
            plan_memdesk_extras(plan, mine, summary)
        else:
            plan_letta_messages(plan, agent, summary, when(data.get("created_at")))
            plan_letta_leftovers(plan, agent, summary)
        plans.append(plan)
    report_file_leftovers(data, agents, summary)
    plan_mcp_servers(data, plans, summary)
    return ImportPlan(plans, summary)


def _free_name(services: AgentFileServices, wanted: str, taken: set[str]) -> str:
    if services.agents.find(wanted) is None and wanted not in taken:
        return wanted
    number = 2
    while services.agents.find(f"{wanted} ({number})") is not None or f"{wanted} ({number})" in taken:
        number += 1
    return f"{wanted} ({number})"


def _clean_label(label: str) -> str:
    cleaned = "".join(c if (c.isalnum() or c in "_-./") else "_" for c in label.strip())
    return cleaned if valid_label(cleaned) else "block"


def _check_schema(data: dict[str, Any], summary: ImportSummary) -> None:
    for key in ("version", "schema_version"):
        if key in data:
            summary.fix(
                f"The file declares {key} {data[key]!r}, which Letta's AgentFileSchema does not have: "
                "the fields this importer knows were imported, others are listed below"
            )
    missing = [key for key in LETTA_REQUIRED if key not in data]
    if missing:
        summary.fix(f"The file has no {', '.join(missing)} (read as empty)")
    for key in LETTA_REQUIRED + ("skills",):
        if key in data and data[key] is not None and not isinstance(data[key], list):
            raise AgentFileError(
                f"The agent file's '{key}' is a {type(data[key]).__name__}, not a list: the file is damaged"
            )


def _referenced(
    plan: AgentPlan, agent: dict, key: str, entries: dict, what: str, summary: ImportSummary
) -> list[tuple[str, dict]]:
    """The file's entries an agent names in ``key`` (block_ids, tool_ids); a dangling id is reported."""
    found = []
    for ref in as_list(agent.get(key)):
        if ref_of(ref) is None:
            summary.fix(f"Agent {plan.name!r} names {what} {shown(ref)}, which is not an id: skipped")
        elif ref in entries:
            found.append((ref, entries[ref]))
        else:
            summary.fix(f"Agent {plan.name!r} names {what} {ref}, which the file does not hold: skipped")
    return found


def _plan_blocks(plan: AgentPlan, agent: dict, blocks: dict, block_users: Counter, summary: ImportSummary) -> None:
    entries = []
    for ref, block in _referenced(plan, agent, "block_ids", blocks, "block", summary):
        if block_users[ref] > 1:
            summary.fix(
                f"Block {block.get('label')!r} is shared by {block_users[ref]} agents in Letta:"
                " each imported agent got its own copy"
            )
        entries.append(block)
    entries += [b for b in as_list(agent.get("memory_blocks")) if isinstance(b, dict)]  # inline CreateBlock entries
    labels: set[str] = set()
    for block in entries:
        label = text_of(block.get("label")).strip()
        cleaned = _clean_label(label) if label else "block"
        if cleaned != label:
            summary.fix(f"Block label {label!r} is not a valid MemDesk label: renamed {cleaned!r}")
        unique, number = cleaned, 2
        while unique in labels:
            unique, number = f"{cleaned}_{number}", number + 1
        if unique != cleaned:
            summary.fix(f"Agent {plan.name!r} had two blocks named {cleaned!r}: the second is {unique!r}")
        labels.add(unique)
        fitted = fit_block(unique, text_of(block.get("value")), block.get("limit"), owner=plan.name)
        for note in fitted.notes:
            summary.fix(note)
        plan.blocks.append(
            BlockPlan(
                unique, fitted.value, fitted.limit, bool(block.get("read_only")), text_of(block.get("description"))
            )
        )
    plan.report.blocks = len(plan.blocks)


def _fit_prompt(plan: AgentPlan, summary: ImportSummary) -> None:
    """The system prompt and core memory together within what a turn leaves them (every block is
    in every prompt)."""
    fitted = fit_prompt(plan.system_prompt, [(b.label, b.value) for b in plan.blocks], owner=plan.name)
    plan.system_prompt = fitted.system
    for block, value in zip(plan.blocks, fitted.values, strict=True):
        block.value = value
    for note in fitted.notes:
        summary.fix(note)


def _plan_tools(
    plan: AgentPlan, agent: dict, tools: dict, builtin_names: set[str], summary: ImportSummary, *, from_memdesk: bool
) -> None:
    seen: set[str] = set()
    entries = [tool for _ref, tool in _referenced(plan, agent, "tool_ids", tools, "tool", summary)]
    for tool_name in as_list(agent.get("tools")):  # CreateAgent also lists tools by name
        if isinstance(tool_name, str) and tool_name not in {text_of(t.get("name")) for t in entries}:
            entries.append({"name": tool_name, "tool_type": "letta_core" if tool_name in builtin_names else "unknown"})
    for tool in entries:
        tool_name = text_of(tool.get("name"))
        if not tool_name or tool_name in seen:
            continue
        seen.add(tool_name)
        tool_type = text_of(tool.get("tool_type"))
        source_code = tool.get("source_code")
        if tool_name in builtin_names:
            plan.report.tools_builtin.append(tool_name)
        elif tool_name in letta.LETTA_EQUIVALENTS and tool_type.startswith("letta"):
            plan.report.tools_builtin.append(tool_name)
            summary.fix(f"Letta's {tool_name} tool is mapped to MemDesk's {letta.LETTA_EQUIVALENTS[tool_name]}")
        elif isinstance(source_code, str) and source_code.strip() and not tool_type.startswith(("letta", "external")):
            plan.tools.append(tool)
            plan.report.tools_disabled.append(tool_name)
            problem = runnable_problem(_preview(tool), builtin_names)
            if problem:
                summary.fix(
                    f"Tool {tool_name} of {plan.name!r} was imported with its code but cannot be enabled: {problem}"
                )
        else:
            why = letta.UNMAPPED_TOOL_TYPES.get(tool_type, f"a {tool_type or 'tool'} without Python code")
            summary.skip(f"Tool {tool_name} of {plan.name!r}: {why}")
    if not from_memdesk:
        for rule in as_list(agent.get("tool_rules")):
            if not isinstance(rule, dict):
                continue
            kind, tool_name = rule.get("type"), rule.get("tool_name")
            if kind == "exit_loop" and tool_name == "send_message":
                continue  # MemDesk ends the turn after send_message anyway
            summary.skip(
                f"Tool rule {kind} on {tool_name} of {plan.name!r}: MemDesk does not enforce"
                " tool rules (kept for export)"
            )


def _preview(tool: dict[str, Any]) -> ImportedTool:
    schema = as_dict(tool.get("json_schema"))
    return ImportedTool(
        0,
        0,
        text_of(tool.get("name")),
        text_of(tool.get("description")),
        text_of(tool.get("source_code")),
        schema,
        "letta",
        {},
        False,
        datetime.now(),
    )
