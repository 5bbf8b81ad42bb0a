"""Undo and revert: each is a recorded change; a later edit by the agent is kept or shown as a
conflict, never silently overwritten."""

from __future__ import annotations

import pytest

from memdesk.core.base.errors import RevertError
from memdesk.core.memory.core_memory import StaleBlockError
from memdesk.core.memory.revert import Reverter, revert_text
from memdesk.core.runtime.scripted import call, say


@pytest.fixture
def reverter(services):
    m = services.memory
    return Reverter(m.core.history, m.core, m.archival)


def latest(services, agent_id, label):
    return services.memory.core.history.latest_for_block(agent_id, label)


def test_reverting_a_user_edit_is_itself_a_recorded_change(services, reverter):
    record = services.create_agent("sam", human="Name: Ada")
    services.memory.core.set_value(record.id, "human", "Name: Bob")
    edit = latest(services, record.id, "human")
    undo = reverter.revert(edit.id)
    assert services.memory.core.get(record.id, "human").value == "Name: Ada"
    assert (undo.source, undo.reverts, undo.before, undo.after) == ("user", edit.id, "Name: Bob", "Name: Ada")
    assert undo.describe() == "user reverted human"
    redo = reverter.revert(undo.id)  # reverting the revert is a redo
    assert services.memory.core.get(record.id, "human").value == "Name: Bob" and redo.reverts == undo.id


def test_undo_last_reverts_the_agents_edit(services, runtime, make_agent, reverter):
    agent = make_agent(human="Name: Ada")
    runtime.enqueue(call("core_memory_append", "note", False, label="human", content="Hates tea"), say("ok"))
    agent.send_user_message("I love tea")
    reverter.undo_last(agent.id, label="human")
    assert services.memory.core.get(agent.id, "human").value == "Name: Ada"


def test_a_later_agent_edit_elsewhere_in_the_block_is_kept(services, runtime, make_agent, reverter):
    agent = make_agent(human="Name: Ada\nCity: Lisbon")
    services.memory.core.set_value(agent.id, "human", "Name: Ada Lovelace\nCity: Lisbon")
    mine = latest(services, agent.id, "human")
    runtime.enqueue(
        call("core_memory_replace", "moved", False, label="human", old_content="Lisbon", new_content="Porto"), say("ok")
    )
    agent.send_user_message("I moved to Porto")
    plan = reverter.plan(mine.id)
    assert plan.merged and not plan.conflict and [c.source for c in plan.later] == ["agent"]
    assert plan.result == "Name: Ada\nCity: Porto"
    reverter.apply(plan)
    assert services.memory.core.get(agent.id, "human").value == "Name: Ada\nCity: Porto"


def test_a_conflicting_agent_edit_is_shown_and_needs_confirmation(services, runtime, make_agent, reverter):
    agent = make_agent(human="Likes tea")
    services.memory.core.set_value(agent.id, "human", "Likes green tea")
    mine = latest(services, agent.id, "human")
    runtime.enqueue(
        call("core_memory_replace", "fix", False, label="human", old_content="green tea", new_content="coffee"),
        say("ok"),
    )
    agent.send_user_message("actually coffee")
    plan = reverter.plan(mine.id)
    assert plan.conflict and plan.current == "Likes coffee" and plan.result == "Likes tea"
    assert "agent changed it 1 more time" in plan.explain()
    with pytest.raises(RevertError, match="overwrite"):
        reverter.apply(plan)
    assert services.memory.core.get(agent.id, "human").value == "Likes coffee"  # nothing overwritten
    reverter.apply(plan, force=True)  # the user confirmed
    assert services.memory.core.get(agent.id, "human").value == "Likes tea"


def test_an_edit_between_planning_and_applying_is_caught(services, reverter):
    record = services.create_agent("sam", human="a")
    services.memory.core.set_value(record.id, "human", "b")
    plan = reverter.plan(latest(services, record.id, "human").id)
    services.memory.core.set_value(record.id, "human", "c", source="consolidation")
    with pytest.raises(StaleBlockError):
        reverter.apply(plan, force=True)
    assert services.memory.core.get(record.id, "human").value == "c"


def test_reverting_creation_removal_and_settings_of_blocks(services, reverter):
    record = services.create_agent("sam")
    core = services.memory.core
    core.create(record.id, "projects", "MemDesk", limit=500, description="What the user builds")
    reverter.revert(latest(services, record.id, "projects").id)
    assert core.get(record.id, "projects") is None
    reverter.undo_last(record.id, label="projects")  # undo the removal: the block comes back as it was
    block = core.get(record.id, "projects")
    assert (block.value, block.limit, block.description) == ("MemDesk", 500, "What the user builds")
    core.configure(record.id, "projects", read_only=True)
    reverter.undo_last(record.id, label="projects")
    assert core.get(record.id, "projects").read_only is False
    core.create(record.id, "notes", "x")
    core.delete(record.id, "notes")
    removal = latest(services, record.id, "notes")
    core.create(record.id, "notes", "new")
    assert not reverter.plan(removal.id).possible  # a block of that name exists again
    with pytest.raises(RevertError, match="exists again"):
        reverter.revert(removal.id)


def test_reverting_a_deletion_over_the_limit_is_refused(services, reverter):
    record = services.create_agent("sam", human="short")
    services.memory.core.set_value(record.id, "human", "")
    edit = latest(services, record.id, "human")
    services.memory.core.configure(record.id, "human", limit=3)
    plan = reverter.plan(edit.id)
    assert not plan.possible and "over its limit" in plan.blocked


def test_reverting_passage_changes(services, runtime, make_agent, reverter):
    agent = make_agent()
    archival = services.memory.archival
    history = services.memory.core.history
    runtime.enqueue(call("archival_memory_insert", "save", False, content="The boat is blue."), say("ok"))
    agent.send_user_message("boat")
    inserted = history.for_agent(agent.id, kind="passage")[0]
    archival.update_text(inserted.target_id, "The boat is red.")
    reverter.undo_last(agent.id, kind="passage")
    assert archival.get(inserted.target_id).text == "The boat is blue."
    archival.delete([inserted.target_id])
    restore = reverter.undo_last(agent.id, kind="passage")
    assert archival.count(agent.id) == 1 and restore.action == "create" and restore.reverts is not None
    back = archival.get(restore.target_id)
    assert back.text == "The boat is blue." and archival.search(agent.id, "blue boat").hits[0].passage.id == back.id
    reverter.revert(restore.id)  # reverting the insert deletes it again
    assert archival.count(agent.id) == 0
    with pytest.raises(RevertError, match="already deleted"):
        reverter.revert(inserted.id)


def test_graph_changes_are_listed_but_not_revertible_by_a_reverter_without_the_graph(services, reverter):
    record = services.create_agent("sam")
    change_id = services.memory.core.history.record(
        record.id, "graph_fact", 3, "create", source="extractor", after="A likes B"
    )
    plan = reverter.plan(change_id)
    assert not plan.possible and "no knowledge graph" in plan.blocked
    assert not reverter.supports("graph_fact")


@pytest.mark.parametrize(
    ("current", "after", "before", "expected"),
    [
        ("abc", "abc", "xyz", "xyz"),  # nothing changed since: the plain before
        (
            "Name: Ada\nLikes tea\nCity: Porto",
            "Name: Ada\nLikes tea",
            "Name: Ada",
            "Name: Ada\nCity: Porto",
        ),  # undo an append
        ("A B C D", "A X C", "A B C", None),  # the edited word was changed again: conflict
        ("cat cat", "cat", "dog", None),  # ambiguous: found twice
    ],
)
def test_revert_text(current, after, before, expected):
    assert revert_text(current, after, before) == expected
