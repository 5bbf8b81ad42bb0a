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

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from desktop.core.agent.agentfile import letta
from desktop.core.agent.agentfile.letta import Incoming
from desktop.core.agent.agentfile.model import EXTENSION_FORMAT, EXTENSION_KEY, EXTENSION_VERSION, AgentFileServices, GraphTransfer
from desktop.core.agent.agentfile.reading import LETTA, LETTA_REQUIRED, detect_format
from desktop.core.agent.agentfile.summary import ImportedAgent, ImportSummary
from desktop.core.agent.imported_blocks import fit_block
from desktop.core.clock import parse_iso
from desktop.core.documents.catalog import restore_document
from desktop.core.memory.archival import NewPassage
from desktop.core.memory.core_memory import valid_label
from desktop.core.memory.history import IMPORT, Cause
from desktop.core.tools.builtin import builtin_tools
from desktop.core.tools.imported import ImportedTool, ImportedTools, runnable_problem
from desktop.errors import AgentExistsError, AgentFileError

_KEPT_ELSEWHERE = {
    "id", "name", "system", "tool_ids", "block_ids", "messages", "in_context_message_ids", "files_agents", "group_ids",
    "source_ids", "folder_ids", "memory_blocks", "tools", "identity_ids",
}
_BLOCK_FIELDS = ("label", "value", "limit", "read_only", "description")


@dataclass
class BlockPlan:
    label: str
    value: str
    limit: int
    read_only: bool
    description: str


@dataclass
class PassagePlan:
    passage: NewPassage
    document_ref: str | None


@dataclass
class AgentPlan:
    ref: str
    name: str
    system_prompt: str
    created_at: datetime | None
    blocks: list[BlockPlan] = field(default_factory=list)
    messages: list[Incoming] = field(default_factory=list)
    context_start_ref: str | None = None  # None: every message is in context
    summary: str = ""
    evicted_count: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)  # Letta tools stored disabled
    extras: dict[str, Any] | None = None  # Letta fields kept for re-export
    documents: list[dict[str, Any]] = field(default_factory=list)
    passages: list[PassagePlan] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    graph: Any = None
    report: ImportedAgent = field(default_factory=lambda: ImportedAgent(""))


@dataclass
class ImportPlan:
    agents: list[AgentPlan]
    summary: ImportSummary


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


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


# --- planning ------------------------------------------------------------------------------------
def plan_import(services: AgentFileServices, data: dict[str, Any], *, name: str | None = None, fixups: list[str] | None = None) -> ImportPlan:
    """Check and map the whole file; nothing is written."""
    if detect_format(data) != LETTA:
        raise AgentFileError("This is a MemDesk JSON export, not a Letta agent file", hint="import it with the same command: it is detected")
    summary = ImportSummary(LETTA)
    for item in fixups or []:
        summary.fix(item)
    extension = _extension(data, summary)
    _check_schema(data, summary)
    agents = [a for a in _as_list(data.get("agents")) if isinstance(a, dict)]
    if len(agents) != len(_as_list(data.get("agents"))):
        summary.fix("Entries of 'agents' that were not objects were skipped")
    if not agents:
        raise AgentFileError("The agent file holds no agents")
    if name is not None and len(agents) > 1:
        raise AgentFileError(f"The file holds {len(agents)} agents; a name can be given only when it holds one")
    blocks = {b.get("id"): b for b in _as_list(data.get("blocks")) if isinstance(b, dict)}
    tools = {t.get("id"): t for t in _as_list(data.get("tools")) if isinstance(t, dict)}
    block_users = Counter(ref for a in agents for ref in set(_as_list(a.get("block_ids"))))
    builtin_names = {tool.name for tool in builtin_tools()}
    taken: set[str] = set()
    plans = []
    for index, agent in enumerate(agents):
        ref = _text(agent.get("id")) or letta.file_id(letta.AGENT, index)
        wanted = _text(agent.get("name")).strip()
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
                why = "another agent in the file has that name" if wanted in taken else "an agent of that name already exists here"
                summary.fix(f"Agent {wanted!r} was imported as {chosen!r} ({why})")
        taken.add(chosen)
        system_prompt = agent.get("system")
        if not isinstance(system_prompt, str) or not system_prompt.strip():
            system_prompt = getattr(getattr(services, "prompts", None), "system", "") or ""
            summary.fix(f"Agent {wanted!r} had no system prompt: MemDesk's default prompt was used")
        mine = extension.get(ref) if extension else None
        plan = AgentPlan(ref, chosen, system_prompt, _when(mine.get("created_at")) if mine else None)
        plan.report = ImportedAgent(chosen, file_name=wanted)
        _plan_blocks(plan, agent, blocks, block_users, summary)
        _plan_tools(plan, agent, tools, builtin_names, summary, from_memdesk=mine is not None)
        if mine is not None:
            _plan_memdesk_messages(plan, agent, mine, summary)
            _plan_memdesk_extras(plan, mine, summary)
        else:
            _plan_letta_messages(plan, agent, summary, _when(data.get("created_at")))
            _plan_letta_leftovers(plan, agent, summary)
        plans.append(plan)
    _report_file_leftovers(data, agents, summary)
    return ImportPlan(plans, summary)


def _when(value: Any) -> datetime | None:
    if isinstance(value, str):
        try:
            return parse_iso(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def _extension(data: dict[str, Any], summary: ImportSummary) -> dict[str, Any] | None:
    extension = data.get(EXTENSION_KEY)
    if extension is None:
        return None
    if not isinstance(extension, dict) or extension.get("format") != EXTENSION_FORMAT:
        summary.fix(f"The file's '{EXTENSION_KEY}' section is not MemDesk's: it was ignored")
        return None
    version = extension.get("version")
    if not isinstance(version, int) or version > EXTENSION_VERSION:
        raise AgentFileError(
            f"This agent file was written by a newer MemDesk (extension version {version}; this one reads up to {EXTENSION_VERSION})",
            hint="upgrade MemDesk to import it",
        )
    agents = extension.get("agents")
    return agents if isinstance(agents, dict) else {}


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
            raise AgentFileError(f"The agent file's '{key}' is a {type(data[key]).__name__}, not a list: the file is damaged")


def _referenced(plan: AgentPlan, agent: dict, key: str, entries: dict, what: str, summary: ImportSummary) -> list[tuple[str, dict]]:
    """The file's entries an agent names in ``key`` (block_ids, tool_ids); a dangling id is reported."""
    found = []
    for ref in _as_list(agent.get(key)):
        if ref in entries:
            found.append((ref, entries[ref]))
        else:
            summary.fix(f"Agent {plan.name!r} names {what} {ref}, which the file does not hold: skipped")
    return found


def _plan_blocks(plan: AgentPlan, agent: dict, blocks: dict, block_users: Counter, summary: ImportSummary) -> None:
    entries = []
    for ref, block in _referenced(plan, agent, "block_ids", blocks, "block", summary):
        if block_users[ref] > 1:
            summary.fix(f"Block {block.get('label')!r} is shared by {block_users[ref]} agents in Letta: each imported agent got its own copy")
        entries.append(block)
    entries += [b for b in _as_list(agent.get("memory_blocks")) if isinstance(b, dict)]  # inline CreateBlock entries
    labels: set[str] = set()
    for block in entries:
        label = _text(block.get("label")).strip()
        cleaned = _clean_label(label) if label else "block"
        if cleaned != label:
            summary.fix(f"Block label {label!r} is not a valid MemDesk label: renamed {cleaned!r}")
        unique, number = cleaned, 2
        while unique in labels:
            unique, number = f"{cleaned}_{number}", number + 1
        if unique != cleaned:
            summary.fix(f"Agent {plan.name!r} had two blocks named {cleaned!r}: the second is {unique!r}")
        labels.add(unique)
        fitted = fit_block(unique, _text(block.get("value")), block.get("limit"), owner=plan.name)
        for note in fitted.notes:
            summary.fix(note)
        plan.blocks.append(BlockPlan(unique, fitted.value, fitted.limit, bool(block.get("read_only")), _text(block.get("description"))))
    plan.report.blocks = len(plan.blocks)


def _plan_tools(plan: AgentPlan, agent: dict, tools: dict, builtin_names: set[str], summary: ImportSummary, *, from_memdesk: bool) -> None:
    seen: set[str] = set()
    entries = [tool for _ref, tool in _referenced(plan, agent, "tool_ids", tools, "tool", summary)]
    for tool_name in _as_list(agent.get("tools")):  # CreateAgent also lists tools by name
        if isinstance(tool_name, str) and tool_name not in {_text(t.get("name")) for t in entries}:
            entries.append({"name": tool_name, "tool_type": "letta_core" if tool_name in builtin_names else "unknown"})
    for tool in entries:
        tool_name = _text(tool.get("name"))
        if not tool_name or tool_name in seen:
            continue
        seen.add(tool_name)
        tool_type = _text(tool.get("tool_type"))
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
                summary.fix(f"Tool {tool_name} of {plan.name!r} was imported with its code but cannot be enabled: {problem}")
        else:
            why = letta.UNMAPPED_TOOL_TYPES.get(tool_type, f"a {tool_type or 'tool'} without Python code")
            summary.skip(f"Tool {tool_name} of {plan.name!r}: {why}")
    if not from_memdesk:
        for rule in _as_list(agent.get("tool_rules")):
            if not isinstance(rule, dict):
                continue
            kind, tool_name = rule.get("type"), rule.get("tool_name")
            if kind == "exit_loop" and tool_name == "send_message":
                continue  # MemDesk ends the turn after send_message anyway
            summary.skip(f"Tool rule {kind} on {tool_name} of {plan.name!r}: MemDesk does not enforce tool rules (kept for export)")


def _preview(tool: dict[str, Any]) -> ImportedTool:
    schema = tool.get("json_schema") if isinstance(tool.get("json_schema"), dict) else {}
    return ImportedTool(0, 0, _text(tool.get("name")), _text(tool.get("description")), _text(tool.get("source_code")), schema, "letta", {}, False, datetime.now())


def _plan_memdesk_messages(plan: AgentPlan, agent: dict, mine: dict, summary: ImportSummary) -> None:
    """A MemDesk export: the extension says exactly what each message was."""
    details = mine.get("messages") if isinstance(mine.get("messages"), dict) else {}
    skip = {mine.get("summary_message")}
    for message in _as_list(agent.get("messages")):
        if not isinstance(message, dict):
            continue
        ref = _text(message.get("id"))
        detail = details.get(ref)
        if detail is None or ref in skip:
            continue  # the system message and the summary's stand-in
        at = _when(message.get("created_at"))
        if at is None:
            raise AgentFileError(f"Message {ref} has no valid created_at: the file is damaged")
        content = detail["content"] if "content" in detail else letta.letta_text(message)
        role = "assistant" if detail.get("kind") == "assistant_call" else "user"
        plan.messages.append(
            Incoming(ref, role, _text(detail.get("kind")) or "user_message", content, at, search_text=_text(detail.get("search_text")),
                     author=detail.get("author"), function_name=detail.get("function_name"), call_ref=detail.get("step"))
        )
    plan.context_start_ref = mine.get("context_start")
    if plan.context_start_ref is None and plan.messages:
        plan.context_start_ref = ""  # every message was evicted
    plan.summary = _text(mine.get("summary"))
    evicted = mine.get("evicted_count")
    plan.evicted_count = evicted if isinstance(evicted, int) else None
    _count_messages(plan)


def _plan_letta_messages(plan: AgentPlan, agent: dict, summary: ImportSummary, file_time: datetime | None) -> None:
    in_context = [r for r in _as_list(agent.get("in_context_message_ids")) if isinstance(r, str)]
    context_ids = set(in_context)
    origin_of: dict[str, str] = {}  # MemDesk message ref -> the Letta message it came from
    unknown_roles: Counter = Counter()
    approvals = system_messages = 0
    last_at = file_time or plan.created_at or datetime.now().astimezone()
    file_ids: set[str] = set()
    for index, message in enumerate(_as_list(agent.get("messages"))):
        if not isinstance(message, dict):
            unknown_roles["(not an object)"] += 1
            continue
        letta_id = _text(message.get("id")) or f"message-unnamed-{index}"
        ref = letta_id
        if ref in file_ids:
            summary.fix(f"Message id {ref} appears twice in {plan.name!r}: both were kept")
            ref = f"{ref}#{index}"
        file_ids.add(letta_id)
        at = letta.created_at_of(message, last_at)
        last_at = at
        role = message.get("role")
        if role == "function":
            summary.fix("Messages with Letta's legacy role 'function' were read as tool results")
            role = "tool"
        if role == "system":
            system_messages += 1
            continue
        if role == "user":
            incoming = letta.user_incoming(ref, message, at)
            if (
                incoming.kind == "system_alert" and letta.SUMMARY_MARKER in incoming.content and not plan.summary
                and not any(origin_of.get(m.ref) in context_ids for m in plan.messages)
            ):
                plan.summary = str(json.loads(incoming.content).get("message", ""))
                summary.fix(f"Letta's summary of {plan.name!r}'s older messages became its conversation summary")
                continue
            made = [incoming]
        elif role == "assistant":
            made = letta.assistant_incoming(ref, message, at)
        elif role == "tool":
            made = [letta.tool_incoming(ref, message, at)]
        elif role == "summary":
            plan.summary = letta.letta_text(message) or plan.summary
            summary.fix(f"A 'summary' message of {plan.name!r} became its conversation summary")
            continue
        elif role == "approval":
            approvals += 1
            continue
        else:
            unknown_roles[str(role)] += 1
            continue
        for made_message in made:
            origin_of[made_message.ref] = letta_id
        plan.messages.extend(made)
    if system_messages:
        summary.fix(
            f"{system_messages} system message(s) of {plan.name!r} were not kept as messages: MemDesk builds the system message "
            "from the system prompt and core memory at every step"
        )
    if approvals:
        summary.skip(f"{approvals} tool-approval message(s) of {plan.name!r} (Letta's human-in-the-loop approvals)")
    for role, count in unknown_roles.items():
        summary.fix(f"{count} message(s) of {plan.name!r} with an unknown role {role!r} were skipped")
    calls = {m.ref for m in plan.messages if m.kind == "assistant_call"}
    orphans = [m for m in plan.messages if m.kind == "function_result" and m.call_ref not in calls]
    if orphans:
        summary.fix(f"{len(orphans)} tool result(s) of {plan.name!r} had no matching call: kept without a link")
        for message in orphans:
            message.call_ref = None
    missing = [r for r in in_context if r not in file_ids]
    if missing:
        summary.fix(f"{len(missing)} in-context message id(s) of {plan.name!r} are not in the file: ignored")
    # MemDesk keeps the newest messages in context, from one message onwards.
    positions = [i for i, m in enumerate(plan.messages) if origin_of[m.ref] in context_ids]
    if positions:
        plan.context_start_ref = plan.messages[positions[0]].ref
        if any(origin_of[m.ref] not in context_ids for m in plan.messages[positions[0]:]):
            summary.fix(f"The in-context messages of {plan.name!r} were not one run: every message from the first of them is in context")
    elif in_context and plan.messages:
        plan.context_start_ref = ""  # only the system message was in context: the rest was evicted
    _count_messages(plan)


def _count_messages(plan: AgentPlan) -> None:
    plan.report.messages = len(plan.messages)
    refs = [m.ref for m in plan.messages]
    if plan.context_start_ref is None:
        plan.report.in_context = len(refs)
    elif plan.context_start_ref == "":
        plan.report.in_context = 0
    else:
        plan.report.in_context = len(refs) - refs.index(plan.context_start_ref)


def _plan_memdesk_extras(plan: AgentPlan, mine: dict, summary: ImportSummary) -> None:
    config = mine.get("config")
    plan.config = config if isinstance(config, dict) else {}
    plan.documents = [d for d in _as_list(mine.get("documents")) if isinstance(d, dict) and d.get("path")]
    known_documents = {d.get("id") for d in plan.documents}
    for entry in _as_list(mine.get("passages")):
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str) or not entry["text"].strip():
            summary.fix(f"An archival passage of {plan.name!r} had no text: skipped")
            continue
        at = _when(entry.get("created_at")) or plan.created_at or datetime.now().astimezone()
        document_ref = entry.get("document") if entry.get("document") in known_documents else None
        tags = [str(t) for t in _as_list(entry.get("tags"))]
        plan.passages.append(
            PassagePlan(
                NewPassage(
                    entry["text"], at, tags, None, entry.get("chunk_index"), entry.get("page"), entry.get("section"),
                    entry.get("char_start"), entry.get("char_end"),
                ),
                document_ref,
            )
        )
    plan.history = [h for h in _as_list(mine.get("history")) if isinstance(h, dict) and h.get("kind") and h.get("action") and h.get("source")]
    plan.graph = mine.get("graph")
    plan.report.passages = len(plan.passages)
    plan.report.documents = len(plan.documents)


def _plan_letta_leftovers(plan: AgentPlan, agent: dict, summary: ImportSummary) -> None:
    """Letta's agent settings MemDesk does not use: reported, and kept for a later export."""
    plan.extras = {k: v for k, v in agent.items() if k not in _KEPT_ELSEWHERE}
    llm = agent.get("llm_config")
    if isinstance(llm, dict) and llm.get("model"):
        where = f" at {llm.get('model_endpoint')}" if llm.get("model_endpoint") else ""
        summary.skip(f"LLM config of {plan.name!r}: {llm.get('model')}{where} (MemDesk runs its own local model; kept for export)")
    embedding = agent.get("embedding_config")
    if isinstance(embedding, dict) and embedding.get("embedding_model"):
        summary.skip(f"Embedding config of {plan.name!r}: {embedding.get('embedding_model')} (MemDesk embeds with its own model)")
    if agent.get("agent_type") == "sleeptime_agent":
        summary.fix(f"{plan.name!r} is a Letta sleep-time agent (a background memory manager): imported as an ordinary agent")
    variables = sorted(set((agent.get("tool_exec_environment_variables") or {}) if isinstance(agent.get("tool_exec_environment_variables"), dict) else {})
                       | set(agent.get("secrets") or {} if isinstance(agent.get("secrets"), dict) else {}))
    if variables:
        summary.skip(f"Tool environment variables of {plan.name!r}: {', '.join(variables)} (values are not imported)")
    files = _as_list(agent.get("files_agents"))
    if files:
        summary.skip(f"{len(files)} open file(s) of {plan.name!r} (Letta's file view; MemDesk documents live in archival memory)")
    for key, what in (("identity_ids", "identities"),):
        if _as_list(agent.get(key)):
            summary.skip(f"{what} of {plan.name!r}: {', '.join(map(str, agent[key]))}")


def _report_file_leftovers(data: dict, agents: list[dict], summary: ImportSummary) -> None:
    agent_names = {a.get("id"): a.get("name") for a in agents}
    groups = [g for g in _as_list(data.get("groups")) if isinstance(g, dict)]
    known_groups = {g.get("id") for g in groups}
    for group in groups:
        manager = group.get("manager_config") if isinstance(group.get("manager_config"), dict) else {}
        members = [agent_names.get(a, a) for a in _as_list(group.get("agent_ids"))]
        lead = agent_names.get(manager.get("manager_agent_id"), manager.get("manager_agent_id"))
        shared = len(_as_list(group.get("shared_block_ids")))
        detail = f"{manager.get('manager_type', 'group')} group" + (f" managed by {lead!r}" if lead else "") + f" with {', '.join(map(repr, members))}"
        detail += f", sharing {shared} block(s)" if shared else ""
        summary.skip(f"Group {group.get('id')}: {detail} (MemDesk agents do not run in groups; each was imported on its own)")
    for agent in agents:
        for group_id in _as_list(agent.get("group_ids")):
            if group_id not in known_groups:
                summary.fix(f"Agent {agent.get('name')!r} names group {group_id}, which the file does not hold: ignored")
    for server in _as_list(data.get("mcp_servers")):
        if isinstance(server, dict):
            where = server.get("server_url") or (server.get("stdio_config") or {}).get("command") or ""
            summary.skip(f"MCP server {server.get('server_name')!r} ({server.get('server_type')}{', ' + str(where) if where else ''})")
    sources = {s.get("id"): s for s in _as_list(data.get("sources")) if isinstance(s, dict)}
    files = [f for f in _as_list(data.get("files")) if isinstance(f, dict)]
    for source_id, source in sources.items():
        names = [f.get("file_name") for f in files if f.get("source_id") == source_id]
        summary.skip(f"Folder {source.get('name')!r} with {len(names)} file(s){': ' + ', '.join(map(str, names)) if names else ''} (Letta folders; add the files as documents)")
    for skill in _as_list(data.get("skills")):
        if isinstance(skill, dict):
            count = len(skill.get("files") or {})
            origin = f"{count} file(s)" if count else f"from {skill.get('source_url')}"
            summary.skip(f"Skill {skill.get('name')!r} ({origin}): MemDesk has no skills")


# --- writing -------------------------------------------------------------------------------------
def import_agent_file(
    services: AgentFileServices,
    data: dict[str, Any],
    *,
    name: str | None = None,
    fixups: list[str] | None = None,
    graph: GraphTransfer | None = None,
    origin: str = "",
) -> ImportSummary:
    """Import every agent in ``data`` (a parsed .af document) in one transaction."""
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
            _write_agent(services, agent, vectors[offset : offset + count] if vectors is not None else None, cause, graph)
            offset += count
    plan.summary.agents = [agent.report for agent in plan.agents]
    return plan.summary


def _write_agent(services: AgentFileServices, plan: AgentPlan, vectors, cause: Cause, graph: GraphTransfer | None) -> None:
    memory = services.memory
    record = services.agents.create_empty(plan.name, system_prompt=plan.system_prompt, created_at=plan.created_at)
    plan.report.agent_id = record.id
    # Messages first: the history and the graph name them.
    stored: dict[str, int] = {}
    for message in plan.messages:
        step = stored.get(message.call_ref) if message.call_ref else None
        added = memory.recall.add(
            record.id, role=message.role, kind=message.kind, content=message.content, created_at=message.created_at,
            search_text=message.search_text, author=message.author, function_name=message.function_name, step_id=step,
        )
        stored[message.ref] = added.id
    # The carried history comes before this store's own record of the import.
    restored: list[tuple[int, dict]] = []
    for entry in plan.history:
        reverts = entry.get("reverts")
        reverted = restored[reverts][0] if isinstance(reverts, int) and 0 <= reverts < len(restored) else None
        restored.append((memory.core.history.restore(record.id, entry, target_id=None, message_ids=stored, reverts=reverted), entry))
    plan.report.history = len(restored)
    for block in plan.blocks:
        memory.core.create(
            record.id, block.label, block.value, limit=block.limit, description=block.description, read_only=block.read_only,
            source=IMPORT, cause=cause,
        )
    document_ids = {d["id"]: restore_document(services.db, record.id, d) for d in plan.documents}
    passages = [
        NewPassage(**{**p.passage.__dict__, "document_id": document_ids.get(p.document_ref)}) if p.document_ref else p.passage
        for p in plan.passages
    ]
    passage_ids = memory.archival.add(record.id, passages, vectors, source=IMPORT, cause=cause) if passages else []
    _link_restored_history(services, record.id, restored, passage_ids)
    tools = ImportedTools(services.db, services.clock)
    for tool in plan.tools:
        schema = tool.get("json_schema") if isinstance(tool.get("json_schema"), dict) else {}
        tools.add(
            record.id, name=_text(tool.get("name")), description=_text(tool.get("description")), source_code=_text(tool.get("source_code")),
            json_schema=schema, origin="letta", original={k: v for k, v in tool.items() if k != "id"},
        )
    if plan.extras is not None:
        services.db.execute(
            "INSERT INTO agent_file_extras(agent_id, format, data) VALUES (?, 'letta', ?)", (record.id, json.dumps(plan.extras, ensure_ascii=False))
        )
    imported = graph.import_graph(services.db, record.id, plan.graph, stored, passage_ids) if plan.graph is not None and graph is not None else None
    if imported is not None:
        plan.report.graph = imported.summary
    for change_id, entry in restored:
        if str(entry.get("kind", "")).startswith("graph"):
            # Carried graph changes point at the new rows, or at none (listed, not revertible).
            moved = imported.change(entry["kind"], entry.get("graph_target"), (entry.get("before_meta"), entry.get("after_meta"))) if imported else None
            memory.core.history.relink(change_id, *(moved or (None, None, None)))
    refs = [m.ref for m in plan.messages]
    if plan.context_start_ref is None:
        context_start = 0
        evicted = 0
    elif plan.context_start_ref == "":
        context_start = (max(stored.values()) + 1) if stored else 0
        evicted = len(refs)
    else:
        context_start = stored[plan.context_start_ref]
        evicted = refs.index(plan.context_start_ref)
    services.agents.update(
        record.id, summary=plan.summary, context_start_id=context_start,
        evicted_count=plan.evicted_count if plan.evicted_count is not None else evicted, config=plan.config,
    )


def _link_restored_history(services: AgentFileServices, agent_id: int, restored: list[tuple[int, dict]], passage_ids: list[int]) -> None:
    """Point carried history entries at this store's rows (blocks by label, passages by position)."""
    core = services.memory.core
    for change_id, entry in restored:
        target = None
        if entry.get("kind") == "block":
            block = core.get(agent_id, _text(entry.get("label")))
            target = block.id if block else None
        elif entry.get("kind") == "passage" and isinstance(entry.get("passage"), int) and 0 <= entry["passage"] < len(passage_ids):
            target = passage_ids[entry["passage"]]
        if target is not None:
            core.history.retarget(change_id, target)
