"""An imported agent's system prompt and core memory fit a turn together (issue 35, item 11): each
block within its own limit was not enough, twelve full blocks (or a 340,000-character system
prompt) made every turn overflow the default context window. The total is capped, the longest
parts cut first, and every cut is reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.scripted import ScriptedRuntime, say
from memdesk.core.transfer.agentfile import export_document, import_agent_file, import_path

TEXT = "Ana likes long walks by the river and strong black tea. "
FULL_BLOCK = (TEXT * 400)[:20_000]


def letta_file(system: str, values: list[str]) -> dict:
    return {
        "agents": [
            {
                "id": "agent-0",
                "name": "hoarder",
                "system": system,
                "block_ids": [f"block-{i}" for i in range(len(values))],
            }
        ],
        "blocks": [
            {"id": f"block-{i}", "label": f"notes_{i}", "value": value, "limit": 20_000}
            for i, value in enumerate(values)
        ],
        "groups": [],
        "files": [],
        "sources": [],
        "tools": [],
        "mcp_servers": [],
    }


def memdesk_json(services, system: str, values: list[str]) -> Path:
    donor = services.create_agent("donor")
    data = export_document(services, donor.id, "json")
    services.agents.delete(donor.id)
    data["agent"].update(name="hoarder", system_prompt=system)
    data["blocks"] = [
        {"label": f"notes_{i}", "value": value, "limit": 20_000, "description": "", "read_only": False}
        for i, value in enumerate(values)
    ]
    path = Path(services.paths.home) / "hoarder.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def turn_fits(services, make_agent) -> None:
    """A turn in MemDesk's default context window answers (it overflowed before)."""
    runtime = ScriptedRuntime(context_window=Settings().context_size)
    agent = make_agent("hoarder", runtime=runtime)
    runtime.enqueue(say("Hello again, Ana."))
    agent.send_user_message("Do you remember me?")
    record = services.agents.find("hoarder")
    assert any(
        m.kind == "assistant_call" and "Hello again, Ana." in m.content for m in services.memory.recall.all(record.id)
    )
    assert agent.budget().used < runtime.info.context_window


CASES = {
    "twelve full blocks": ("You remember.", [FULL_BLOCK] * 12),
    "a 340,000-character system prompt": ((TEXT * 7000)[:340_000], ["Name: Ana"]),
}


@pytest.mark.parametrize("source", ["letta", "json"])
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_prompt_too_big_for_a_turn_is_cut_and_reported(services, make_agent, source, case):
    system, values = case
    if source == "letta":
        summary = import_agent_file(services, letta_file(system, values))
    else:
        summary = import_path(services, memdesk_json(services, system, values))
    record = services.agents.find("hoarder")
    blocks = services.memory.core.blocks(record.id)
    total = len(record.system_prompt) + sum(len(b.value) for b in blocks)
    assert total <= 22_000
    cut = [f for f in summary.fixups if "a turn fits the model's context window" in f]
    assert cut, summary.fixups
    if len(values) > 1:  # the blocks shared what the system prompt left, equally
        assert len({len(b.value) for b in blocks}) == 1 and len(cut) == 12
    else:
        assert record.system_prompt == system[:12_000] and blocks[0].value == "Name: Ana"
    turn_fits(services, make_agent)


def test_short_blocks_stay_whole_when_a_long_one_is_cut(services):
    summary = import_agent_file(services, letta_file("You remember.", ["Name: Ana", FULL_BLOCK, FULL_BLOCK]))
    record = services.agents.find("hoarder")
    values = [b.value for b in services.memory.core.blocks(record.id)]
    assert "Name: Ana" in values
    assert sum(map(len, values)) + len("You remember.") <= 22_000
    assert len([f for f in summary.fixups if "cut to its first" in f]) == 2


def test_a_stock_letta_agent_is_not_cut(services, agentfiles):
    from memdesk.core.transfer.agentfile import read_agent_file

    data, fixups = read_agent_file(agentfiles / "deep_research_agent.af")
    summary = import_agent_file(services, data, fixups=fixups)
    assert not [f for f in summary.fixups if "context window" in f]
