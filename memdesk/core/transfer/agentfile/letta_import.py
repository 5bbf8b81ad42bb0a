"""An agent file written by Letta, mapped for import: its messages become MemDesk's events and calls
(the message-level mapping is letta.py's), and what MemDesk has no equivalent for (LLM configs,
groups, MCP servers, folders, skills) is listed in the summary; the agent's Letta-only settings are
kept for a later export."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime

from memdesk.core.tools.mcp_client.servers import from_letta
from memdesk.core.transfer.agentfile import letta
from memdesk.core.transfer.agentfile.checks import ref_of
from memdesk.core.transfer.agentfile.plan import AgentPlan, as_dict, as_list, count_messages, text_of
from memdesk.core.transfer.agentfile.summary import ImportSummary

_KEPT_ELSEWHERE = {
    "id",
    "name",
    "system",
    "tool_ids",
    "block_ids",
    "messages",
    "in_context_message_ids",
    "files_agents",
    "group_ids",
    "source_ids",
    "folder_ids",
    "memory_blocks",
    "tools",
    "identity_ids",
}


def plan_letta_messages(plan: AgentPlan, agent: dict, summary: ImportSummary, file_time: datetime | None) -> None:
    in_context = [r for r in as_list(agent.get("in_context_message_ids")) if isinstance(r, str)]
    context_ids = set(in_context)
    origin_of: dict[str, str] = {}  # MemDesk message ref -> the Letta message it came from
    unknown_roles: Counter = Counter()
    approvals = system_messages = 0
    last_at = file_time or plan.created_at or datetime.now().astimezone()
    file_ids: set[str] = set()
    for index, message in enumerate(as_list(agent.get("messages"))):
        if not isinstance(message, dict):
            unknown_roles["(not an object)"] += 1
            continue
        letta_id = text_of(message.get("id")) or f"message-unnamed-{index}"
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
                incoming.kind == "system_alert"
                and letta.SUMMARY_MARKER in incoming.content
                and not plan.summary
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
            f"{system_messages} system message(s) of {plan.name!r} were not kept as messages:"
            " MemDesk builds the system message "
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
        if any(origin_of[m.ref] not in context_ids for m in plan.messages[positions[0] :]):
            summary.fix(
                f"The in-context messages of {plan.name!r} were not one run:"
                " every message from the first of them is in context"
            )
    elif in_context and plan.messages:
        plan.context_start_ref = ""  # only the system message was in context: the rest was evicted
    count_messages(plan)


def plan_letta_leftovers(plan: AgentPlan, agent: dict, summary: ImportSummary) -> None:
    """Letta's agent settings MemDesk does not use: reported, and kept for a later export."""
    plan.extras = {k: v for k, v in agent.items() if k not in _KEPT_ELSEWHERE}
    llm = agent.get("llm_config")
    if isinstance(llm, dict) and llm.get("model"):
        where = f" at {llm.get('model_endpoint')}" if llm.get("model_endpoint") else ""
        summary.skip(
            f"LLM config of {plan.name!r}: {llm.get('model')}{where} (MemDesk runs its own local model;"
            " kept for export)"
        )
    embedding = agent.get("embedding_config")
    if isinstance(embedding, dict) and embedding.get("embedding_model"):
        summary.skip(
            f"Embedding config of {plan.name!r}: {embedding.get('embedding_model')} (MemDesk embeds with its own model)"
        )
    if agent.get("agent_type") == "sleeptime_agent":
        summary.fix(
            f"{plan.name!r} is a Letta sleep-time agent (a background memory manager): imported as an ordinary agent"
        )
    variables = sorted(
        set(
            (agent.get("tool_exec_environment_variables") or {})
            if isinstance(agent.get("tool_exec_environment_variables"), dict)
            else {}
        )
        | set(agent.get("secrets") or {} if isinstance(agent.get("secrets"), dict) else {})
    )
    if variables:
        summary.skip(f"Tool environment variables of {plan.name!r}: {', '.join(variables)} (values are not imported)")
    files = as_list(agent.get("files_agents"))
    if files:
        summary.skip(
            f"{len(files)} open file(s) of {plan.name!r} (Letta's file view; MemDesk documents live in archival memory)"
        )
    for key, what in (("identity_ids", "identities"),):
        if as_list(agent.get(key)):
            summary.skip(f"{what} of {plan.name!r}: {', '.join(map(str, agent[key]))}")


def report_file_leftovers(data: dict, agents: list[dict], summary: ImportSummary) -> None:
    agent_names = {ref_of(a.get("id")): a.get("name") for a in agents}
    groups = [g for g in as_list(data.get("groups")) if isinstance(g, dict)]
    known_groups = {ref_of(g.get("id")) for g in groups}
    for group in groups:
        manager = as_dict(group.get("manager_config"))
        members = [agent_names.get(ref_of(a), a) for a in as_list(group.get("agent_ids"))]
        lead = agent_names.get(ref_of(manager.get("manager_agent_id")), manager.get("manager_agent_id"))
        shared = len(as_list(group.get("shared_block_ids")))
        detail = (
            f"{manager.get('manager_type', 'group')} group"
            + (f" managed by {lead!r}" if lead else "")
            + f" with {', '.join(map(repr, members))}"
        )
        detail += f", sharing {shared} block(s)" if shared else ""
        summary.skip(
            f"Group {group.get('id')}: {detail} (MemDesk agents do not run in groups; each was imported on its own)"
        )
    for agent in agents:
        for group_id in as_list(agent.get("group_ids")):
            if ref_of(group_id) not in known_groups:
                summary.fix(
                    f"Agent {agent.get('name')!r} names group {group_id}, which the file does not hold: ignored"
                )
    sources = {s.get("id"): s for s in as_list(data.get("sources")) if isinstance(s, dict)}
    files = [f for f in as_list(data.get("files")) if isinstance(f, dict)]
    for source_id, source in sources.items():
        names = [f.get("file_name") for f in files if f.get("source_id") == source_id]
        summary.skip(
            f"Folder {source.get('name')!r} with {len(names)}"
            f" file(s){': ' + ', '.join(map(str, names)) if names else ''} (Letta folders; add the files as documents)"
        )
    for skill in as_list(data.get("skills")):
        if isinstance(skill, dict):
            count = len(skill.get("files") or {})
            origin = f"{count} file(s)" if count else f"from {skill.get('source_url')}"
            summary.skip(f"Skill {skill.get('name')!r} ({origin}): MemDesk has no skills")


def plan_mcp_servers(data: dict, plans: list[AgentPlan], summary: ImportSummary) -> None:
    """The file's MCP servers, for each of its agents, stored disabled (Letta keeps them for the
    whole file); their tokens, headers and environment are not imported."""
    for server in as_list(data.get("mcp_servers")):
        if not isinstance(server, dict):
            continue
        found = from_letta(server)
        label = f"MCP server {server.get('server_name')!r} ({server.get('server_type')})"
        if found is None:
            summary.skip(f"{label}: it names neither a command nor a URL")
            continue
        for plan in plans:
            plan.mcp_servers.append(found)
        secrets = [k for k in ("token", "custom_headers", "auth_header", "auth_token", "env") if server.get(k)]
        left = f"; its {', '.join(secrets)} were not imported" if secrets else ""
        summary.fix(f"{label} imported disabled{left}: enable it with memdesk mcp servers AGENT --enable NAME")
