"""Bad agent files get a clear error or a reported fix-up, and never leave half an agent behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdesk.core.base.errors import AgentExistsError, AgentFileError
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.scripted import ScriptedRuntime, say
from memdesk.core.tools.imported import ImportedTools
from memdesk.core.transfer.agentfile import (
    EXTENSION_KEY,
    export_agent_file,
    export_document,
    import_agent_file,
    import_path,
    importing,
    read_agent_file,
)
from memdesk.core.transfer.imported_blocks import MAX_IMPORTED_BLOCK_CHARS


def store_is_empty_of_imports(services, before: int) -> None:
    db = services.db
    assert len(services.agents.list()) == before
    for table in (
        "memory_blocks",
        "messages",
        "passages",
        "memory_history",
        "imported_tools",
        "agent_file_extras",
        "documents",
    ):
        owners = db.scalar(f"SELECT COUNT(*) FROM {table} WHERE agent_id NOT IN (SELECT id FROM agents)")
        assert owners == 0, table


def test_a_truncated_file(services, agentfiles, tmp_path):
    raw = (agentfiles / "memgpt_agent_with_convo.af").read_bytes()
    cut = tmp_path / "cut.af"
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(AgentFileError, match="not valid JSON: it ends too early"):
        import_path(services, cut)
    assert services.agents.list() == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"hello, I am not JSON", "not valid JSON: Expecting value at line 1"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "not a text file"),
        (b"[1, 2, 3]", "not an agent file"),
        (b'{"agents": "many"}', "neither a Letta agent file"),
        (b'{"hello": "world"}', "neither a Letta agent file"),
        (b'{"agents": []}', "holds no agents"),
        (b'{"agents": [{"name": "x"}], "blocks": "oops"}', "'blocks' is a str, not a list"),
        (b"", "is empty"),
    ],
)
def test_files_that_are_not_agent_files(services, tmp_path, content, message):
    path = tmp_path / "bad.af"
    path.write_bytes(content)
    with pytest.raises(AgentFileError, match=message):
        import_path(services, path)
    assert services.agents.list() == []


def test_a_huge_file_is_refused_by_size_before_reading(services, tmp_path, monkeypatch):
    path = tmp_path / "huge.af"
    with open(path, "wb") as handle:
        handle.truncate(1024**3)  # 1 GB, sparse: nothing is written
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("the file was read"))
    with pytest.raises(AgentFileError, match="1,024 MB, more than the 200 MB"):
        read_agent_file(path)


def test_an_unknown_schema_version(services, make_agent):
    agent = make_agent("sam")
    document = export_agent_file(services, [agent.id])
    document[EXTENSION_KEY]["version"] = 99
    with pytest.raises(AgentFileError, match="newer MemDesk"):
        import_agent_file(services, document)
    letta = export_agent_file(services, [agent.id])
    del letta[EXTENSION_KEY]
    letta["schema_version"] = "7.0"  # a future Letta
    summary = import_agent_file(services, letta)
    assert any("schema_version '7.0'" in item for item in summary.fixups)
    legacy = {"format": "memdesk-agent", "version": 99, "agent": {}}
    path = Path(services.paths.home) / "legacy.json"
    path.write_text(json.dumps(legacy))
    with pytest.raises(AgentFileError, match="newer MemDesk"):
        import_path(services, path)


def test_block_values_over_their_limit_are_cut_to_it(services):
    data = {
        "agents": [{"id": "agent-0", "name": "big", "system": "s", "block_ids": ["block-0"]}],
        "blocks": [{"id": "block-0", "label": "notes", "value": "n" * 5000 + "o" * 1000, "limit": 5000}],
        "groups": [],
        "files": [],
        "sources": [],
        "tools": [],
        "mcp_servers": [],
    }
    summary = import_agent_file(services, data)
    block = services.memory.core.get(summary.agents[0].agent_id, "notes")
    assert block.value == "n" * 5000 and block.limit == 5000
    assert summary.fixups == [
        "Block 'notes' of 'big' held 6,000 characters, over its limit of 5,000: cut to its first 5,000 characters"
    ]


def _letta_file_with_block(value: str, limit) -> dict:
    block = {"id": "block-0", "label": "human", "value": value} | ({} if limit is None else {"limit": limit})
    return {
        "agents": [{"id": "agent-0", "name": "hoarder", "system": "You remember.", "block_ids": ["block-0"]}],
        "blocks": [block],
        "groups": [],
        "files": [],
        "sources": [],
        "tools": [],
        "mcp_servers": [],
    }


def _memdesk_json_with_block(services, value: str, limit) -> Path:
    donor = services.create_agent("donor")
    data = export_document(services, donor.id, "json")
    services.agents.delete(donor.id)
    data["agent"]["name"] = "hoarder"
    data["blocks"] = [{"label": "human", "value": value, "limit": limit, "description": "", "read_only": False}]
    path = Path(services.paths.home) / "hoarder.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


TWO_MB = ("Ana likes long walks by the river and strong black tea. " * 40_000)[: 2 * 1024 * 1024]


@pytest.mark.parametrize(
    ("source", "limit", "expected"),
    [
        (
            "letta",
            len(TWO_MB),
            [
                f"Block 'human' of 'hoarder' had a limit of {len(TWO_MB):,} characters,"
                " over MemDesk's maximum for an imported block: set to 20,000",
                f"Block 'human' of 'hoarder' held {len(TWO_MB):,} characters,"
                " over its limit of 20,000: cut to its first 20,000 characters",
            ],
        ),
        (
            "letta",
            None,
            [
                "Block 'human' of 'hoarder' had no valid character limit: set to 20,000",
                f"Block 'human' of 'hoarder' held {len(TWO_MB):,} characters,"
                " over its limit of 20,000: cut to its first 20,000 characters",
            ],
        ),
        (
            "json",
            10**9,
            [
                "Block 'human' of 'hoarder' had a limit of 1,000,000,000 characters,"
                " over MemDesk's maximum for an imported block: set to 20,000",
                f"Block 'human' of 'hoarder' held {len(TWO_MB):,} characters,"
                " over its limit of 20,000: cut to its first 20,000 characters",
            ],
        ),
    ],
)
def test_a_2_mb_block_is_cut_at_import_and_the_agent_still_answers(services, make_agent, source, limit, expected):
    if source == "letta":
        summary = import_agent_file(services, _letta_file_with_block(TWO_MB, limit))
    else:
        summary = import_path(services, _memdesk_json_with_block(services, TWO_MB, limit))
    assert summary.fixups == expected
    assert "cut to its first 20,000 characters" in summary.text()
    record = services.agents.find("hoarder")
    block = services.memory.core.get(record.id, "human")
    assert block.value == TWO_MB[:MAX_IMPORTED_BLOCK_CHARS] and block.limit == MAX_IMPORTED_BLOCK_CHARS
    # A turn in MemDesk's default context window: the whole block was in every prompt before.
    runtime = ScriptedRuntime(context_window=Settings().context_size)
    agent = make_agent("hoarder", runtime=runtime)
    runtime.enqueue(say("Hello again, Ana."))
    agent.send_user_message("Do you remember me?")
    assert any(
        m.kind == "assistant_call" and "Hello again, Ana." in m.content for m in services.memory.recall.all(record.id)
    )
    assert agent.budget().used < runtime.info.context_window


def test_duplicate_agent_names(services, make_agent):
    agent = make_agent("sam")
    document = export_agent_file(services, [agent.id])
    summary = import_agent_file(services, document)
    assert summary.agents[0].name == "sam (2)" and "already exists here" in summary.fixups[0]
    with pytest.raises(AgentExistsError):
        import_agent_file(services, document, name="sam")
    two = export_agent_file(services, [agent.id, agent.id])
    assert [a.name for a in import_agent_file(services, two).agents] == ["sam (3)", "sam (4)"]


def test_messages_with_unknown_roles_are_reported(services):
    data = {
        "agents": [
            {
                "id": "agent-0",
                "name": "talker",
                "system": "s",
                "in_context_message_ids": ["message-0", "message-1", "message-2"],
                "messages": [
                    {"id": "message-0", "role": "user", "content": "hi", "created_at": "2026-01-01T10:00:00Z"},
                    {
                        "id": "message-1",
                        "role": "oracle",
                        "content": "I foresee...",
                        "created_at": "2026-01-01T10:00:01Z",
                    },
                    {"id": "message-2", "role": "assistant", "content": "hello!", "created_at": "not a time"},
                    "not even an object",
                ],
            }
        ],
        "groups": [],
        "blocks": [],
        "files": [],
        "sources": [],
        "tools": [],
        "mcp_servers": [],
    }
    summary = import_agent_file(services, data)
    messages = services.memory.recall.all(summary.agents[0].agent_id)
    assert [m.kind for m in messages] == ["user_message", "assistant_call"]
    assert (
        messages[1].created_at.isoformat() == "2026-01-01T10:00:01+00:00"
    )  # a bad time: the one of the message before it
    assert "1 message(s) of 'talker' with an unknown role 'oracle' were skipped" in summary.fixups
    assert any("'(not an object)'" in item for item in summary.fixups)


def test_a_failure_halfway_leaves_no_half_imported_agent(services, agentfiles, monkeypatch):
    before = len(services.agents.list())
    data, fixups = read_agent_file(agentfiles / "customer_service.af")
    data["agents"].append(dict(data["agents"][0], id="agent-1", name="second"))

    def broken(*args, **kwargs):
        raise OSError("disk on fire")

    original = ImportedTools.add
    calls = []

    def add_then_fail(self, *args, **kwargs):
        calls.append(1)
        if len(calls) > 5:  # the second agent's tools: the first agent is fully written by now
            broken()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ImportedTools, "add", add_then_fail)
    with pytest.raises(OSError, match="disk on fire"):
        import_agent_file(services, data, fixups=fixups)
    store_is_empty_of_imports(services, before)
    assert services.db.scalar("SELECT COUNT(*) FROM memory_blocks") == 0


def test_a_damaged_memdesk_export_is_refused_before_writing(services, make_agent):
    agent = make_agent("sam")
    agent.memory.recall.add(
        agent.id, role="user", kind="user_message", content="{}", created_at=services.clock.now(), search_text="x"
    )
    document = export_agent_file(services, [agent.id])
    for message in document["agents"][0]["messages"][1:]:
        message["created_at"] = "yesterday-ish"
    before = len(services.agents.list())
    with pytest.raises(AgentFileError, match="no valid created_at"):
        import_agent_file(services, document)
    assert len(services.agents.list()) == before


def test_planning_writes_nothing(services, agentfiles):
    data, _ = read_agent_file(agentfiles / "deep_research_agent.af")
    plan = importing.plan_import(services, data)
    assert plan.agents[0].name == "deep-thought-research-agent" and services.agents.list() == []
