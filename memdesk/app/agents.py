"""An agent, and its consolidation pass, built on the store's services with the settings in force."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from memdesk.app.services import Services, snapshot_before
from memdesk.core.agent.loop import Agent
from memdesk.core.agent.observer import AgentObserver
from memdesk.core.agent.recall.search import AutoRecall, RecallSettings
from memdesk.core.agent.recall.sources import ArchivalSource, ConversationSource, MemorySource
from memdesk.core.agent.recall.versions import newest_first
from memdesk.core.agent.settings import AgentSettings
from memdesk.core.base.errors import (
    ToolError,
)
from memdesk.core.base.settings_table import Settings
from memdesk.core.consolidation.consolidator import Consolidator
from memdesk.core.consolidation.modes import ConsolidationSettings
from memdesk.core.memory.agents import AgentRecord
from memdesk.core.runtime.base import ChatMessage, Runtime
from memdesk.core.runtime.private import PrivateRuntime
from memdesk.core.tools.builtin import default_registry
from memdesk.core.tools.context import ConsentPolicy
from memdesk.core.tools.files import FileSandbox
from memdesk.core.tools.http import HttpPolicy
from memdesk.core.tools.imported import ImportedTools
from memdesk.core.tools.mcp_client.servers import McpServers
from memdesk.core.tools.mcp_client.tools import McpLimits, server_tools
from memdesk.core.tools.registry import Tool, ToolRegistry, load_user_tools

log = logging.getLogger("memdesk.app")


def open_agent(
    services: Services,
    record: AgentRecord,
    runtime: Runtime,
    *,
    consent: ConsentPolicy | None = None,
    observer: AgentObserver | None = None,
    settings: Settings | None = None,
) -> Agent:
    settings = settings or services.settings
    # Tools an imported agent file brought run only once the user enabled them (and ask each time).
    imported = ImportedTools(services.db, services.clock).enabled_tools(record.id)
    tools = default_registry(
        load_user_tools(services.paths.user_tools) + imported + mcp_tools(services, record, settings)
    )
    if services.private:
        # Asked of every request: the runtime is shared with the saved conversation.
        runtime, tools = PrivateRuntime(runtime), _without_file_writes(tools)
    profile = services.models.profile_for(settings)
    in_force = profile.settings_in_force(settings, services.settings_store.stored_names())
    return Agent(
        record.id,
        memory=services.memory,
        runtime=runtime,
        tools=tools,
        prompts=services.prompts,
        files=FileSandbox(services.paths.agent_files(record.id)),
        http=HttpPolicy.from_settings(settings),
        consent=consent,
        settings=AgentSettings.from_settings(
            in_force, tool_section=profile.tool_section, hidden_functions=frozenset(profile.hidden_functions)
        ),
        observer=observer,
        recall=open_auto_recall(services, settings),
        user_name=lambda: services.settings_store.load().user_name,
    )


def mcp_tools(services: Services, record: AgentRecord, settings: Settings) -> list[Tool]:
    """The tools of the MCP servers the user enabled for this agent (each call asks first); a tool
    whose schema the call grammar cannot keep is left out, and the log says why."""
    limits = McpLimits(settings.mcp_call_timeout_s, settings.mcp_result_chars)
    found: list[Tool] = []
    for server in McpServers(services.db, services.clock).enabled(record.id):
        tools, refused = server_tools(server, limits)
        found += tools
        for tool in refused:
            log.info("MCP tool %s of %s left out: %s", tool.tool, server.name, tool.reason)
    return found


#: Built-in functions that write outside the store, which a private chat must not.
FILE_WRITING_TOOLS = ("append_to_text_file",)


def _without_file_writes(tools: ToolRegistry) -> ToolRegistry:
    """The same functions (so the prompt, and its cached state, stay those of the saved chat), with
    those that write files refusing before the user is even asked."""

    def refuse(ctx, **arguments) -> None:
        raise ToolError("Nothing is written to files during a private chat; the user can save it themselves")

    for name in FILE_WRITING_TOOLS:
        tool = tools.resolve(name)
        if tool is not None:
            tools.replace(replace(tool, check=refuse))
    return tools


def recall_sources(services: Services) -> list[MemorySource]:
    """What automatic recall searches, in this order of precedence at equal rank."""
    return [
        ConversationSource(services.memory.recall),
        ArchivalSource(services.memory.archival),
    ]


def open_auto_recall(services: Services, settings: Settings) -> AutoRecall | None:
    if not settings.auto_recall:
        return None
    return AutoRecall(
        recall_sources(services),
        RecallSettings.from_settings(settings),
        order=newest_first,
    )


def open_consolidator(
    services: Services,
    record: AgentRecord,
    runtime: Runtime | None,
    *,
    settings: Settings | None = None,
    prefix: Callable[[], Sequence[ChatMessage]] | None = None,
) -> Consolidator:
    """The idle-time consolidation pass of one agent, with the agent's own memory functions.
    ``runtime`` may be None to review proposals without a model. ``prefix`` (the open agent's
    ``prompt_prefix``) lets the pass reuse the conversation's KV cache."""
    settings = settings or services.settings
    return Consolidator(
        record.id,
        memory=services.memory,
        runtime=runtime,
        tools=default_registry(load_user_tools(services.paths.user_tools)),
        instructions=services.prompts.consolidation,
        settings=ConsolidationSettings.from_settings(settings),
        prefix=prefix,
        before_apply=lambda: snapshot_before(services, "before applying consolidation"),
    )
