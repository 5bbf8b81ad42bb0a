"""Export agents as a Letta agent file (.af, Letta's AgentFileSchema).

The Letta part carries what Letta understands: the agent, its memory blocks, its messages with the
in-context ids, the system prompt and tools. What Letta has no place for (archival passages and
their documents, the memory history, the knowledge graph, and the MemDesk details that make a
round trip exact) goes under the top-level ``"memdesk"`` key, which Letta's schema ignores
(extension.py, with its import half).
"""

from __future__ import annotations

import json
from typing import Any

from memdesk.core.base.clock import iso
from memdesk.core.tools.builtin import builtin_tools
from memdesk.core.tools.imported import ImportedTools
from memdesk.core.tools.mcp_client.servers import McpServer, McpServers, to_letta
from memdesk.core.transfer.agentfile import letta
from memdesk.core.transfer.agentfile.extension import agent_extension, extension_section, message_detail
from memdesk.core.transfer.agentfile.letta import AGENT, BLOCK, MESSAGE, TOOL, file_id
from memdesk.core.transfer.agentfile.model import EXTENSION_KEY, AgentFileServices, GraphTransfer

#: Letta agent fields MemDesk fills in when the agent did not come from Letta.
_AGENT_DEFAULTS: dict[str, Any] = {
    "memory_blocks": [],
    "tools": [],
    "source_ids": [],
    "folder_ids": None,
    "tool_rules": [],
    "tags": [],
    "agent_type": "memgpt_agent",
    "initial_message_sequence": None,
    "include_base_tools": False,
    "include_multi_agent_tools": False,
    "include_base_tool_rules": False,
    "include_default_source": False,
    "description": None,
    "metadata": None,
    "model": None,
    "embedding": None,
    "context_window_limit": None,
    "embedding_chunk_size": None,
    "max_tokens": None,
    "max_reasoning_tokens": None,
    "enable_reasoner": False,
    "reasoning": None,
    "from_template": None,
    "template": False,
    "project": None,
    "tool_exec_environment_variables": {},
    "secrets": None,
    "memory_variables": None,
    "project_id": None,
    "template_id": None,
    "base_template_id": None,
    "identity_ids": None,
    "message_buffer_autoclear": False,
    "enable_sleeptime": False,
    "response_format": None,
    "timezone": "UTC",
    "max_files_open": None,
    "per_file_view_window_char_limit": None,
    "hidden": None,
    "parallel_tool_calls": False,
}
#: Fields an export always writes itself (never copied from what an import kept).
_GENERATED = {
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
}


def local_llm_config(model: str, context_window: int, temperature: float) -> dict[str, Any]:
    """The model MemDesk ran the agent on, as Letta's LLMConfig."""
    return {
        "model": model,
        "display_name": None,
        "model_endpoint_type": "llamacpp",
        "model_endpoint": None,
        "provider_name": None,
        "provider_category": None,
        "model_wrapper": None,
        "context_window": context_window,
        "put_inner_thoughts_in_kwargs": True,
        "handle": None,
        "temperature": temperature,
        "max_tokens": None,
        "enable_reasoner": False,
        "reasoning_effort": None,
        "max_reasoning_tokens": 0,
        "frequency_penalty": None,
        "compatibility_type": None,
        "verbosity": None,
        "tier": None,
        "parallel_tool_calls": False,
    }


def _embedding_config(model_id: str, dimension: int) -> dict[str, Any]:
    return {
        "embedding_endpoint_type": "hugging-face",
        "embedding_endpoint": None,
        "embedding_model": model_id,
        "embedding_dim": dimension,
        "embedding_chunk_size": 300,
        "handle": None,
        "batch_size": 32,
        "azure_endpoint": None,
        "azure_version": None,
        "azure_deployment": None,
    }


def _tool_entry(
    tool_ref: str, name: str, description: str, json_schema: dict, tool_type: str, source_code: str | None
) -> dict[str, Any]:
    return {
        "id": tool_ref,
        "tool_type": tool_type,
        "description": description,
        "source_type": "python",
        "name": name,
        "tags": [tool_type] if tool_type != "custom" else [],
        "source_code": source_code,
        "json_schema": json_schema,
        "args_json_schema": None,
        "return_char_limit": 6000,
        "pip_requirements": None,
        "npm_requirements": None,
        "default_requires_approval": None,
        "enable_parallel_execution": False,
        "created_by_id": None,
        "last_updated_by_id": None,
        "metadata_": {},
    }


def _block_entry(block_ref: str, block) -> dict[str, Any]:
    return {
        "value": block.value,
        "limit": block.limit,
        "project_id": None,
        "template_name": None,
        "is_template": False,
        "template_id": None,
        "base_template_id": None,
        "deployment_id": None,
        "entity_id": None,
        "preserve_on_migration": False,
        "label": block.label,
        "read_only": block.read_only,
        "description": block.description,
        "metadata": {},
        "hidden": None,
        "id": block_ref,
    }


def _mcp_servers(services: AgentFileServices, agent_ids: list[int]) -> list[dict[str, Any]]:
    """The agents' MCP servers, each once (Letta keeps them for the whole file), without secrets:
    MemDesk keeps none."""
    found: dict[tuple[str, str], McpServer] = {}
    store = McpServers(services.db, services.clock)
    for agent_id in agent_ids:
        for server in store.all(agent_id):
            found.setdefault((server.name, server.where()), server)
    return [to_letta(server, f"mcp_server-{n}") for n, server in enumerate(found.values())]


def export_agent_file(
    services: AgentFileServices,
    agent_ids: list[int],
    *,
    llm_config: dict[str, Any] | None = None,
    graph: GraphTransfer | None = None,
) -> dict[str, Any]:
    """One .af document holding ``agent_ids``. ``llm_config`` describes the local model (for
    agents that did not come from Letta with their own); ``graph`` exports the knowledge graph."""
    memory = services.memory
    tools_store = ImportedTools(services.db, services.clock)
    builtin_specs = {tool.name: tool.spec for tool in builtin_tools()}
    counter = {"message": 0, "block": 0}
    tools: dict[str, dict[str, Any]] = {}  # by name: one entry per tool in the file
    document: dict[str, Any] = {
        "agents": [],
        "groups": [],
        "blocks": [],
        "files": [],
        "sources": [],
        "tools": [],
        "mcp_servers": [],
        "skills": [],
    }
    extension_agents: dict[str, Any] = {}

    def tool_ref(name: str, make) -> str:
        if name not in tools:
            tools[name] = make(file_id(TOOL, len(tools)))
        return tools[name]["id"]

    for agent_index, agent_id in enumerate(agent_ids):
        record = services.agents.get(agent_id)
        agent_ref = file_id(AGENT, agent_index)
        extras = _extras(services, agent_id)
        # --- blocks
        block_ids = []
        for block in memory.core.blocks(agent_id):
            ref = file_id(BLOCK, counter["block"])
            counter["block"] += 1
            document["blocks"].append(_block_entry(ref, block))
            block_ids.append(ref)
        # --- tools: MemDesk's Letta-compatible built-ins, then the tools an import brought
        tool_ids = []
        for name, tool_type in letta.LETTA_BUILTINS.items():
            spec = builtin_specs[name]
            schema = {"name": name, "description": spec.description, "parameters": spec.parameters}
            tool_ids.append(
                tool_ref(
                    name, lambda ref, n=name, s=schema, t=tool_type: _tool_entry(ref, n, s["description"], s, t, None)
                )
            )
        for imported in tools_store.list(agent_id):

            def make(ref, tool=imported):
                entry = (
                    dict(tool.original)
                    if tool.original
                    else _tool_entry(ref, tool.name, tool.description, tool.json_schema, "custom", tool.source_code)
                )
                entry.update(
                    {
                        "id": ref,
                        "name": tool.name,
                        "source_code": tool.source_code,
                        "json_schema": tool.json_schema,
                        "description": tool.description,
                    }
                )
                return entry

            tool_ids.append(tool_ref(imported.name, make))
        # --- messages: the system prompt first, then the summary (Letta keeps it in context), then recall
        messages = memory.recall.all(agent_id)
        letta_messages: list[dict[str, Any]] = []

        def next_message_ref() -> str:
            ref = file_id(MESSAGE, counter["message"])
            counter["message"] += 1
            return ref

        system_ref = next_message_ref()
        letta_messages.append(letta.system_message(system_ref, agent_ref, record.system_prompt, record.created_at))
        in_context = [system_ref]
        summary_ref = None
        if record.summary:
            summary_ref = next_message_ref()
            at = messages[0].created_at if messages else record.created_at
            letta_messages.append(letta.summary_message(summary_ref, agent_ref, record.summary, at))
            in_context.append(summary_ref)
        refs: dict[int, str] = {}
        call_refs: dict[int, str] = {}  # calls exported as tool calls (their output parsed)
        details: dict[str, Any] = {}
        context_start_ref = None
        for message in messages:
            ref = next_message_ref()
            refs[message.id] = ref
            converted = letta.to_letta(message, ref, agent_ref, call_refs)
            if converted.get("tool_calls"):
                call_refs[message.id] = ref
            letta_messages.append(converted)
            if message.id >= record.context_start_id:
                in_context.append(ref)
                context_start_ref = context_start_ref or ref
            details[ref] = message_detail(message, converted, refs)
        agent_entry = {**_AGENT_DEFAULTS, **{k: v for k, v in extras.items() if k not in _GENERATED}}
        agent_entry.setdefault("llm_config", None)
        agent_entry.setdefault("embedding_config", None)
        if agent_entry["llm_config"] is None and llm_config is not None:
            agent_entry["llm_config"] = llm_config
        if agent_entry["embedding_config"] is None:
            embedder = memory.archival.embedder
            agent_entry["embedding_config"] = _embedding_config(embedder.model_id, embedder.dimension)
        agent_entry.update(
            {
                "name": record.name,
                "system": record.system_prompt,
                "tool_ids": tool_ids,
                "block_ids": block_ids,
                "source_ids": [],
                "id": agent_ref,
                "in_context_message_ids": in_context,
                "messages": letta_messages,
                "files_agents": [],
                "group_ids": [],
            }
        )
        document["agents"].append(agent_entry)
        # --- the MemDesk extension: what Letta has no place for
        extension_agents[agent_ref] = agent_extension(
            services, record, details, refs, summary_ref, context_start_ref, graph
        )
    document["tools"] = list(tools.values())
    document["mcp_servers"] = _mcp_servers(services, agent_ids)
    document["metadata"] = {"exported_by": "MemDesk"}
    document["created_at"] = iso(services.clock.now())
    document[EXTENSION_KEY] = extension_section(extension_agents)
    return document


def _extras(services: AgentFileServices, agent_id: int) -> dict[str, Any]:
    row = services.db.query_one(
        "SELECT data FROM agent_file_extras WHERE agent_id = ? AND format = 'letta'", (agent_id,)
    )
    return json.loads(row[0]) if row else {}
