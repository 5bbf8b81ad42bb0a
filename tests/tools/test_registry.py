"""Tools are plain functions; their JSON schema comes from the signature and the docstring."""

from __future__ import annotations

from typing import Literal

import pytest

from memdesk.core.base.errors import ConfigError, ToolError
from memdesk.core.tools.builtin import ALIASES, default_registry
from memdesk.core.tools.registry import load_user_tools, make_tool, validate_arguments


def plan_trip(ctx, city: str, days: int, mode: Literal["train", "car"] = "train", tags: list[str] | None = None) -> str:
    """Plan a trip to a city.

    Args:
        city: Where to go.
        days: How many days to stay,
            counting the day of arrival.
        mode: How to travel.
        tags: Labels for the plan.
    """
    return f"{city} for {days} days by {mode}"


def test_schema_is_generated_from_signature_and_docstring():
    tool = make_tool(plan_trip)
    assert tool.spec.description == "Plan a trip to a city."
    props = tool.spec.parameters["properties"]
    assert props["city"] == {"type": "string", "description": "Where to go."}
    assert props["days"]["type"] == "integer"
    assert props["days"]["description"] == "How many days to stay, counting the day of arrival."
    assert props["mode"]["enum"] == ["train", "car"]
    assert props["tags"]["type"] == "array" and props["tags"]["items"] == {"type": "string"}
    assert tool.spec.parameters["required"] == ["city", "days", "request_heartbeat"]
    assert props["request_heartbeat"]["type"] == "boolean"


def test_send_message_and_pause_heartbeats_take_no_heartbeat():
    registry = default_registry()
    assert "request_heartbeat" not in registry.resolve("send_message").spec.parameters["properties"]
    assert "request_heartbeat" not in registry.resolve("pause_heartbeats").spec.parameters["properties"]
    assert registry.heartbeat_tools() == frozenset(registry.names()) - {"send_message", "pause_heartbeats"}


def test_every_seed_function_is_registered_with_its_aliases():
    registry = default_registry()
    assert set(registry.names()) == {
        "send_message",
        "pause_heartbeats",
        "message_chatgpt",
        "core_memory_append",
        "core_memory_replace",
        "conversation_search",
        "conversation_search_date",
        "archival_memory_insert",
        "archival_memory_search",
        "read_from_text_file",
        "append_to_text_file",
        "http_request",
        "knowledge_graph_search",
        "knowledge_graph_insert",  # memary's supplement to the seed
    }
    for old, new in ALIASES.items():
        assert registry.resolve(old).name == new


def test_arguments_are_validated_and_gently_coerced():
    tool = make_tool(plan_trip)
    assert validate_arguments(tool, {"city": "Rome", "days": "3"}) == {"city": "Rome", "days": 3}
    with pytest.raises(ToolError, match="one of"):
        validate_arguments(tool, {"city": "Rome", "days": 3, "mode": "plane"})
    with pytest.raises(ToolError, match="unexpected argument"):
        validate_arguments(tool, {"city": "Rome", "days": 3, "weather": "sunny"})


def test_a_tool_without_docstring_or_types_is_rejected():
    def undocumented(ctx, x: int) -> str:
        return ""

    def untyped(ctx, x) -> str:
        """Does things."""

    with pytest.raises(ConfigError, match="docstring"):
        make_tool(undocumented)
    with pytest.raises(ConfigError, match="annotation"):
        make_tool(untyped)


def test_duplicate_names_are_an_error():
    registry = default_registry()
    with pytest.raises(ConfigError, match="already exists"):
        registry.add(make_tool(plan_trip, name="send_message"))


def test_user_tools_load_from_the_tools_folder_and_are_callable(tmp_path, services, runtime, make_agent):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "weather.py").write_text(
        "def local_weather(ctx, city: str) -> str:\n"
        '    """Tell the weather in a city.\n\n    Args:\n        city: The city.\n    """\n'
        '    return f"Sunny in {city}"\n\nTOOLS = [local_weather]\n'
    )
    tools = load_user_tools(tmp_path / "tools")
    assert [t.name for t in tools] == ["local_weather"]
    from memdesk.core.runtime.scripted import call, say

    agent = make_agent()
    agent.tools.add(tools[0])
    runtime.enqueue(call("local_weather", "check", False, city="Oslo"), say("Sunny in Oslo."))
    result = agent.send_user_message("weather?")
    assert result.steps[0].ok and result.steps[0].result == "Sunny in Oslo"
    assert "local_weather" in runtime.tools_seen[0]


def test_user_tools_ask_before_each_call_unless_they_declare_themselves_read_only(
    tmp_path, services, runtime, make_agent
):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "notes.py").write_text(
        "def save_note(ctx, text: str) -> str:\n"
        '    """Save a note on disk.\n\n    Args:\n        text: The note.\n    """\n'
        '    return "saved"\n\n'
        "def count_notes(ctx) -> str:\n"
        '    """Count the saved notes."""\n'
        '    return "3 notes"\n\n'
        "count_notes.read_only = True\n\n"
        "TOOLS = [save_note, count_notes]\n"
    )
    from memdesk.core.runtime.scripted import call, say

    asked = []

    class Refuses:
        def allow(self, agent_id, tool, summary):
            asked.append(tool)
            return False

    agent = make_agent(consent=Refuses())
    for tool in load_user_tools(tmp_path / "tools"):
        agent.tools.add(tool)
    runtime.enqueue(call("save_note", "save", False, text="milk"), say("I could not."))
    step = agent.send_user_message("note: milk").steps[0]
    assert asked == ["save_note"] and not step.ok and "did not allow" in step.result
    runtime.enqueue(call("count_notes", "count", False), say("3 notes."))
    step = agent.send_user_message("how many notes?").steps[0]
    assert asked == ["save_note"] and step.ok and step.result == "3 notes"
