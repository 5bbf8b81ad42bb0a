"""Letta's own agent files import: the four published ones in tests/data/agentfiles, and the
newer shapes (several agents, groups with shared blocks, skills, tool calls and results)."""

from __future__ import annotations

import json

import pytest

from memdesk.app.agents import open_agent
from memdesk.core.base.errors import ConfigError
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.tools.context import AllowAll, DenyAll
from memdesk.core.tools.imported import ImportedTools
from memdesk.core.tools.mcp_client.servers import McpServers
from memdesk.core.transfer.agentfile import import_agent_file, read_agent_file


def imported(services, path):
    data, fixups = read_agent_file(path)
    return data, import_agent_file(services, data, fixups=fixups, origin=path.name)


def assert_blocks_as_in_file(services, agent_id, data):
    blocks = {b.label: b for b in services.memory.core.blocks(agent_id)}
    by_id = {b["id"]: b for b in data["blocks"]}
    for ref in data["agents"][0]["block_ids"]:
        block = by_id[ref]
        mine = blocks[block["label"]]
        assert (mine.value, mine.limit, mine.read_only, mine.description) == (
            block["value"],
            block["limit"],
            block["read_only"],
            block["description"],
        )
    assert len(blocks) == len(data["agents"][0]["block_ids"])


@pytest.mark.parametrize("name", ["memgpt_agent.af", "memgpt_agent_with_convo.af"])
def test_the_memgpt_agents(services, agentfiles, name):
    data, summary = imported(services, agentfiles / name)
    [agent] = summary.agents
    assert agent.name == "memgpt_agent" and agent.blocks == 2
    record = services.agents.get(agent.agent_id)
    assert record.system_prompt == data["agents"][0]["system"]
    assert_blocks_as_in_file(services, agent.agent_id, data)
    assert sorted(agent.tools_builtin) == ["conversation_search", "memory_insert", "memory_replace"]
    assert agent.tools_disabled == [] and agent.messages == 0  # the only message is Letta's compiled system message
    assert any("gpt-4o-mini" in item and "LLM config" in item for item in summary.unmapped)
    assert any("text-embedding-3-small" in item for item in summary.unmapped)
    assert any("system message" in item for item in summary.fixups)
    assert ("encoded twice" in " ".join(summary.fixups)) == (
        name == "memgpt_agent.af"
    )  # that file is a JSON string of JSON
    history = services.memory.core.history.for_agent(agent.agent_id)
    assert {(c.source, c.action) for c in history} == {("import", "create")} and len(history) == 2
    assert history[0].note == f"imported from {name}"


def test_customer_service_tools_come_disabled_and_run_only_with_consent(services, agentfiles):
    data, summary = imported(services, agentfiles / "customer_service.af")
    [agent] = summary.agents
    assert agent.name == "customer_service"
    assert_blocks_as_in_file(services, agent.agent_id, data)
    assert sorted(agent.tools_disabled) == ["cancel_order", "check_order_status", "escalate", "terminate_chat"]
    store = ImportedTools(services.db, services.clock)
    sources = {t["name"]: t["source_code"] for t in data["tools"] if t["tool_type"] == "custom"}
    tools = store.list(agent.agent_id)
    assert {t.name: t.source_code for t in tools} == sources and not any(t.enabled for t in tools)
    record = services.agents.get(agent.agent_id)
    runtime = ScriptedRuntime(context_window=32768)
    assert "check_order_status" not in open_agent(services, record, runtime, consent=AllowAll()).tools.names()
    store.set_enabled(agent.agent_id, "check_order_status", True)  # the user read the code and enabled it
    denied = open_agent(services, record, runtime, consent=DenyAll())
    runtime.enqueue(call("check_order_status", "look", False, order_number=42), say("sorry"))
    step = denied.send_user_message("where is order 42?").steps[0]
    assert not step.ok and "did not allow" in step.result  # still asks before each run
    allowed = open_agent(services, record, runtime, consent=AllowAll())
    runtime.enqueue(call("check_order_status", "look", False, order_number=42), say("it is processing"))
    step = allowed.send_user_message("where is order 42?").steps[0]
    assert step.ok and step.result == "Order 42 is currently processing."


def test_deep_research_agent(services, agentfiles):
    data, summary = imported(services, agentfiles / "deep_research_agent.af")
    [agent] = summary.agents
    assert agent.name == "deep-thought-research-agent"
    assert_blocks_as_in_file(services, agent.agent_id, data)
    persona = services.memory.core.get(agent.agent_id, "persona")
    assert persona.read_only and services.memory.core.get(agent.agent_id, "research_citations").limit == 5000
    assert sorted(agent.tools_disabled) == ["create_research_plan", "reset_research"]
    assert any("create_research_plan" in item and "agent_state" in item for item in summary.fixups)
    with pytest.raises(ConfigError, match="agent_state"):
        ImportedTools(services.db, services.clock).set_enabled(agent.agent_id, "reset_research", True)
    assert any(item.startswith("Tool web_search") for item in summary.unmapped)
    assert any("claude-sonnet-4-5" in item for item in summary.unmapped)
    assert "memory" in agent.tools_builtin


def newer_file() -> dict:
    """The shape of the newer published files: two agents sharing blocks in a sleep-time group,
    skills, an MCP server, a folder, tool calls with results, an approval and an unknown role."""

    def message(number, role, **fields):
        return {
            "id": f"message-{number}",
            "role": role,
            "content": [],
            "created_at": f"2026-02-11T20:0{number}:00+00:00",
            **fields,
        }

    text = lambda t: [{"type": "text", "text": t}]  # noqa: E731
    main_messages = [
        message(0, "system", content=text("You are Evie.")),
        message(1, "user", content=text("Hello, I am Ada"), name="Ada"),
        message(
            2,
            "assistant",
            content=[{"type": "reasoning", "reasoning": "Greet and remember."}],
            tool_calls=[
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {
                        "name": "memory_insert",
                        "arguments": json.dumps({"label": "human", "new_str": "Ada"}),
                    },
                }
            ],
        ),
        message(
            3,
            "tool",
            content=text('{"status": "OK", "message": "None", "time": "now"}'),
            name="memory_insert",
            tool_call_id="toolu_1",
        ),
        message(
            4, "assistant", content=[{"type": "reasoning", "reasoning": "Reply."}, {"type": "text", "text": "Hi Ada!"}]
        ),
        message(5, "approval", content=[]),
        message(6, "narrator", content=text("Meanwhile...")),
    ]
    return {
        "agents": [
            {
                "id": "agent-0",
                "name": "Evie",
                "system": "You are Evie.",
                "agent_type": "letta_v1_agent",
                "block_ids": ["block-0", "block-1"],
                "tool_ids": ["tool-0", "tool-1"],
                "messages": main_messages,
                "in_context_message_ids": ["message-0", "message-1", "message-2", "message-3", "message-4"],
                "group_ids": ["group-0"],
                "llm_config": {"model": "claude-opus", "model_endpoint": "https://api.anthropic.com/v1"},
                "tool_rules": [],
            },
            {
                "id": "agent-1",
                "name": "Evie",
                "system": "You manage memory.",
                "agent_type": "sleeptime_agent",
                "block_ids": ["block-0", "block-2"],
                "tool_ids": [],
                "messages": [],
                "in_context_message_ids": [],
            },
        ],
        "groups": [
            {
                "id": "group-0",
                "agent_ids": ["agent-1"],
                "shared_block_ids": ["block-0"],
                "manager_config": {"manager_type": "sleeptime", "manager_agent_id": "agent-0"},
            }
        ],
        "blocks": [
            {"id": "block-0", "label": "persona", "value": "I am Evie.", "limit": 5000},
            {"id": "block-1", "label": "system/human/work", "value": "x" * 30, "limit": 10, "read_only": False},
            {"id": "block-2", "label": "notes about Ada!", "value": "likes tea", "limit": 100},
        ],
        "files": [{"id": "file-0", "source_id": "source-0", "file_name": "notes.md", "content": "Hello"}],
        "sources": [{"id": "source-0", "name": "folder-1"}],
        "tools": [
            {"id": "tool-0", "name": "memory_insert", "tool_type": "letta_sleeptime_core"},
            {"id": "tool-1", "name": "send_discord_dm", "tool_type": "external_mcp"},
        ],
        "mcp_servers": [
            {"id": "mcp_server-0", "server_name": "discord", "server_type": "sse", "server_url": "https://mcp.example"}
        ],
        "skills": [
            {"name": "verify-claims", "files": {"SKILL.md": "Check facts."}},
            {"name": "linear", "source_url": "letta-ai/skills/linear"},
        ],
        "metadata": {"revision_id": "3e54e2fa2f7e"},
    }


def test_a_newer_file_with_groups_shared_blocks_and_skills(services):
    summary = import_agent_file(services, newer_file())
    evie, helper = summary.agents
    assert (evie.name, helper.name) == ("Evie", "Evie (2)")  # two agents of one name in the file
    assert (
        services.memory.core.get(helper.agent_id, "persona").value
        == services.memory.core.get(evie.agent_id, "persona").value
    )
    work = services.memory.core.get(evie.agent_id, "system/human/work")
    assert work.value == "x" * 10 and work.limit == 10  # over its limit: cut to it
    assert services.memory.core.get(helper.agent_id, "notes_about_Ada_").value == "likes tea"
    kinds = [(m.kind, m.function_name) for m in services.memory.recall.all(evie.agent_id)]
    assert kinds == [
        ("user_message", None),
        ("assistant_call", "memory_insert"),
        ("function_result", "memory_insert"),
        ("assistant_call", "send_message"),
    ]
    messages = services.memory.recall.all(evie.agent_id)
    assert (
        messages[2].step_id == messages[1].id
        and messages[0].author == "Ada"
        and messages[0].search_text == "Hello, I am Ada"
    )
    reply = json.loads(messages[3].content)
    assert reply == {"function": "send_message", "params": {"inner_thoughts": "Reply.", "message": "Hi Ada!"}}
    assert json.loads(messages[1].content)["params"]["inner_thoughts"] == "Greet and remember."
    assert services.memory.recall.search_text(evie.agent_id, "Hi Ada").total == 1
    (discord,) = McpServers(services.db, services.clock).all(evie.agent_id)
    assert (discord.name, discord.url, discord.enabled, discord.origin) == (
        "discord",
        "https://mcp.example",
        False,
        "letta",
    )
    text = summary.text()
    for expected in (
        "shared by 2 agents",
        "Block 'system/human/work' of 'Evie' held 30 characters, over its limit of 10: cut to its first 10",
        "renamed 'notes_about_Ada_'",
        "unknown role 'narrator'",
        "sleep-time agent",
        "Imported 2 agent(s)",
        "MCP server 'discord' (sse) imported disabled",
    ):
        assert expected in text, expected
    for expected in (
        "Group group-0: sleeptime group managed by 'Evie'",
        "Skill 'verify-claims' (1 file(s))",
        "Skill 'linear' (from letta-ai/skills/linear)",
        "Folder 'folder-1' with 1 file(s): notes.md",
        "tool-approval message",
        "Tool send_discord_dm of 'Evie': an MCP server tool",
        "LLM config of 'Evie': claude-opus",
    ):
        assert any(expected in item for item in summary.unmapped), expected


def test_in_context_ids_set_the_context_window(services):
    data = newer_file()
    data["agents"] = data["agents"][:1]
    data["agents"][0]["in_context_message_ids"] = ["message-0", "message-3", "message-4"]
    summary = import_agent_file(services, data)
    [agent] = summary.agents
    messages = services.memory.recall.all(agent.agent_id)
    record = services.agents.get(agent.agent_id)
    assert record.context_start_id == messages[2].id and record.evicted_count == 2 and agent.in_context == 2
    data["agents"][0]["in_context_message_ids"] = ["message-0", "message-1", "message-4"]  # not one run
    summary = import_agent_file(services, data)
    assert any("not one run" in item for item in summary.fixups)


@pytest.mark.parametrize(("status", "shown"), [("success", "OK"), ("error", "Failed")])
def test_a_tool_result_that_is_plain_text_becomes_a_function_result(status, shown):
    """Letta keeps some tools' returns as plain text, with the status beside it."""
    from datetime import UTC, datetime

    from memdesk.core.transfer.agentfile import letta

    message = {
        "role": "tool",
        "content": [],
        "tool_returns": [{"func_response": "42 results", "status": status, "tool_call_id": "toolu_9"}],
        "name": "web_search",
    }
    incoming = letta.tool_incoming("message-7", message, datetime(2026, 2, 11, tzinfo=UTC))
    assert json.loads(incoming.content) == {"status": shown, "message": "42 results"}
    assert incoming.call_ref == "toolu_9"
