"""What MemDesk learned from imported conversations: proposals about the person, each with the
messages it came from, newest version first; nothing enters core memory until accepted, and an
accepted one is written through the normal path (Memory history, undo)."""

from __future__ import annotations

from memdesk.core.memory.revert import Reverter
from memdesk.core.transfer.history.learning import PENDING, REJECTED, Learning
from tests.history.conftest import DATA


def proposals(services, agent_id) -> dict[str, object]:
    return {p.text: p for p in Learning(services.memory).pending(agent_id)}


def test_the_imported_conversations_propose_facts_with_their_sources(services, agent_id, chatgpt_zip, run_import):
    human_before = services.memory.core.get(agent_id, "human").value
    run_import(chatgpt_zip)
    run_import(DATA / "claude_conversations.json")
    learning = Learning(services.memory)
    assert learning.propose(agent_id) >= 6
    found = proposals(services, agent_id)
    assert "Name: Dana" in found
    assert "Lives in Porto (since Jun 2024); earlier: Lisbon" in found  # the newest version first
    assert "Works at Ribeira Labs (since Jun 2024)" in found
    assert "Eats vegetarian" in found and "Loves mushrooms" in found
    assert "daughter: Mia" in found and "Allergic to peanuts" in found
    sources = learning.sources(found["Lives in Porto (since Jun 2024); earlier: Lisbon"])
    said = [text for _at, _where, text in sources]
    assert any("moved to Porto" in text for text in said) and any("live in Lisbon" in text for text in said)
    assert any(where == "Moving day (chatgpt)" for _at, where, _t in sources)
    assert services.memory.core.get(agent_id, "human").value == human_before  # nothing unreviewed


def test_accepting_writes_core_memory_through_history_and_undo_takes_it_back(
    services, agent_id, chatgpt_zip, run_import
):
    run_import(chatgpt_zip)
    learning = Learning(services.memory)
    learning.propose(agent_id)
    name = proposals(services, agent_id)["Name: Dana"]
    accepted = learning.accept(name.id, "Name: Dana (from ChatGPT)")
    core = services.memory.core
    assert core.get(agent_id, "human").value.endswith("Name: Dana (from ChatGPT)")
    change = core.history.get(accepted.change_id)
    assert change.source == "user" and change.label == "human" and "imported conversation" in change.note
    Reverter(core.history, core, services.memory.archival).undo_last(agent_id, label="human")
    assert "Dana" not in core.get(agent_id, "human").value


def test_a_rejected_proposal_is_not_proposed_again(services, agent_id, chatgpt_zip, run_import):
    run_import(chatgpt_zip)
    learning = Learning(services.memory)
    learning.propose(agent_id)
    rejected = learning.reject(proposals(services, agent_id)["Loves mushrooms"].id)
    assert rejected.status == REJECTED
    learning.propose(agent_id)
    assert "Loves mushrooms" not in proposals(services, agent_id)
    assert all(p.status == PENDING for p in learning.pending(agent_id))
