"""A malformed agent file is refused with an AgentFileError, or imported with what did not fit
reported; it never raises anything else, and nothing it leaves breaks a later read (issue 35,
item 17): ``history.at = "yesterday-ish"`` or ``retention_days: "abc"`` used to import and then
break ``memdesk history`` and retention every time."""

from __future__ import annotations

import copy
import json

import pytest

from memdesk.cli.main import main
from memdesk.core.base.errors import AgentFileError
from memdesk.core.memory.forget.retention import Retention
from memdesk.core.tools.imported import ImportedTools, runnable_problem
from memdesk.core.transfer.agentfile import export_agent_file, import_agent_file, read_agent_file
from memdesk.core.transfer.agentfile.graph import GraphFileTransfer
from tests.agent.test_agent_file_round_trip import lived  # noqa: F401  (the fixture: an agent with a past)

GRAPH = GraphFileTransfer()


def exported(services, agent) -> dict:
    return json.loads(json.dumps(export_agent_file(services, [agent.id], graph=GRAPH)))


def extension(document: dict) -> dict:
    [mine] = document["memdesk"]["agents"].values()
    return mine


def everything_reads(services, agent_id: int) -> None:
    """What the window and the terminal read of an agent: none of it may fail on what came in."""
    history = services.memory.core.history.for_agent(agent_id, limit=10_000)
    assert all(change.describe() for change in history)
    retention = Retention(services.db, services.clock)
    retention.policy(agent_id)
    retention.preview(agent_id)
    retention.run_if_due(agent_id)
    services.memory.recall.all(agent_id)
    services.memory.archival.list(agent_id, offset=0, limit=100)
    services.memory.graph.all_facts(agent_id)
    for tool in ImportedTools(services.db, services.clock).list(agent_id):
        runnable_problem(tool)
    export_agent_file(services, [agent_id], graph=GRAPH)


def imports_or_refuses(services, document: dict) -> list[str]:
    """The import's fix-ups, after checking that every read works; [] and nothing stored when the
    file was refused."""
    before = {a.id for a in services.agents.list()}
    try:
        summary = import_agent_file(services, document, graph=GRAPH)
    except AgentFileError as error:
        assert error.user_message
        assert {a.id for a in services.agents.list()} == before  # nothing half imported
        return []
    for agent in summary.agents:
        everything_reads(services, agent.agent_id)
    return summary.fixups


def test_a_history_time_that_is_not_one_is_left_out_and_the_history_still_reads(services, lived, capsys):  # noqa: F811
    document = exported(services, lived)
    extension(document)["history"][0]["at"] = "yesterday-ish"
    fixups = imports_or_refuses(services, document)
    assert "History entry 1 of 'sam (2)' has no valid time ('yesterday-ish'): it was not imported" in fixups
    services.close()
    assert main(["history", "sam (2)"]) == 0
    assert "\t" in capsys.readouterr().out


def test_retention_days_that_are_not_a_number_leave_retention_off(services, lived):  # noqa: F811
    document = exported(services, lived)
    extension(document)["config"] = {"retention_days": "abc"}
    fixups = imports_or_refuses(services, document)
    assert "Retention of 'sam (2)' was 'abc', not a number of days: retention is off" in fixups
    copy_id = services.agents.find("sam (2)").id
    assert Retention(services.db, services.clock).policy(copy_id).days == 0


def test_a_200000_character_tool_body_is_imported_disabled_with_the_reason(services, agentfiles):
    data, _fixups = read_agent_file(agentfiles / "customer_service.af")
    tool = next(t for t in data["tools"] if t.get("source_code"))
    tool["source_code"] = "def f():\n    return " + "-" * 200_000 + "1\n"
    fixups = imports_or_refuses(services, data)
    assert any(f"Tool {tool['name']} of" in f and "cannot be enabled" in f for f in fixups)


def at(document: dict, path: tuple) -> tuple[dict | list, object]:
    node = document
    for step in path[:-1]:
        node = extension(document) if step == "*" else node[step]
    return node, path[-1]


#: Each a place in the file and a value that does not belong there; what the fuzzing of the
#: review and of this fix found.
MALFORMED = [
    (("agents", 0, "block_ids"), [[1]]),
    (("agents", 0, "tool_ids"), [{}]),
    (("agents", 0, "id"), []),
    (("agents", 0, "group_ids"), [[1]]),
    (("blocks", 0, "id"), []),
    (("tools", 0, "id"), {}),
    (("tools", 0, "json_schema", "parameters", "properties"), None),
    (("agents", 0, "messages", 1, "created_at"), "0001-01-01T00:00:00+05:00"),
    (("memdesk", "agents", "agent-0"), "not an agent"),
    (("*", "history", 0, "kind"), [[1]]),
    (("*", "history", 0, "label"), None),
    (("*", "history", 0, "message"), []),
    (("*", "history", 0, "at"), ""),
    (("*", "history", 0, "at"), "0001-01-01T00:00:00+05:00"),
    (("*", "history", 1, "reverts"), 10**30),
    (("*", "history", 0, "before_meta"), "rows"),
    (("*", "evicted_count"), 10**30),
    (("*", "context_start"), "message-999"),
    (("*", "summary_message"), []),
    (("*", "config"), {"retention_days": 10**30}),
    (("*", "config"), {"retention_days": [[1]]}),
    (("*", "config"), "on"),
    (("*", "documents", 0, "size_bytes"), 10**30),
    (("*", "documents", 0, "error"), {"a": 1}),
    (("*", "documents", 0, "created_at"), "yesterday-ish"),
    (("*", "passages", 0, "chunk_index"), 10**30),
    (("*", "passages", 0, "section"), ["a"]),
    (("*", "graph", "entities"), "not a list"),
    (("*", "graph", "entities", 0), {}),
    (("*", "graph", "entities", 0, "id"), None),
    (("*", "graph", "entities", 0, "created_at"), "yesterday-ish"),
    (("*", "graph", "facts", 0, "subject"), ""),
    (("*", "graph", "facts", 0, "author"), "mallory"),
    (("*", "graph", "facts", 0, "valid_from"), 10**30),
    (("*", "graph", "mentions"), None),
    (("*", "graph", "mentions", 0, "at"), [1]),
    (("*", "graph", "entities", 0, "kind"), None),
    (("*", "graph", "facts", 0, "created_at"), None),
]


@pytest.mark.parametrize(
    ("path", "value"), MALFORMED, ids=[f"{'.'.join(map(str, p))}={v!r}"[:60] for p, v in MALFORMED]
)
def test_a_malformed_field_is_refused_or_reported_never_raised(services, lived, path, value):  # noqa: F811
    document = exported(services, lived)
    node, key = at(document, path)
    node[key] = copy.deepcopy(value)  # type: ignore[index]
    imports_or_refuses(services, document)
