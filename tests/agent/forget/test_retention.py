"""Retention (issue 19 §4): an agent may forget conversation messages older than N days. Off by
default; a new policy is previewed and applies only once confirmed; core memory, archival memory
and the knowledge graph are kept; it runs while the user is idle."""

from __future__ import annotations

import pytest

from memdesk.core.base.errors import MemDeskError
from memdesk.core.memory.forget.remove import FORGET_KIND
from memdesk.core.memory.forget.retention import Retention
from memdesk.core.runtime.scripted import say


@pytest.fixture
def retention(services) -> Retention:
    return Retention(
        services.db, services.clock, history=services.memory.archival.history, kv_cache=services.paths.kv_cache
    )


@pytest.fixture
def old_and_new(services, clock, runtime, make_agent):
    """Two turns 40 days ago (one naming Lisbon, kept in the graph and core memory), one today."""
    agent = make_agent()
    runtime.enqueue(say("Lisbon is lovely"))
    agent.send_user_message("I moved to Lisbon")
    first = services.memory.recall.all(agent.id)[0]
    graph = services.memory.graph
    with services.db.transaction():
        lisbon = graph.resolve(agent.id, "Lisbon", "place")
        graph.add_mention(agent.id, lisbon, at=first.created_at, message_id=first.id)
    graph.insert_fact(agent.id, "User", "lives in", "Lisbon", author="extractor", message_id=first.id)
    services.memory.core.set_value(agent.id, "human", "Lives in Lisbon")
    services.memory.archival.insert(agent.id, "Notes on Lisbon trams")
    clock.advance(days=40)
    runtime.enqueue(say("Good morning"))
    agent.send_user_message("Good morning")
    return agent


def test_retention_is_off_by_default_and_removes_nothing(services, old_and_new, retention):
    assert not retention.policy(old_and_new.id).on
    assert retention.due(old_and_new.id) is None
    assert retention.run_if_due(old_and_new.id) == 0


def test_a_new_policy_is_previewed_and_applies_only_once_confirmed(services, old_and_new, retention):
    agent_id = old_and_new.id
    total = services.memory.recall.count(agent_id)
    retention.set_days(agent_id, 30)
    preview = retention.due(agent_id)
    assert preview is not None and 0 < preview.messages < total
    assert "older than 30 days" in preview.describe()
    assert retention.run_if_due(agent_id) == 0  # not confirmed yet: the idle run does nothing
    with pytest.raises(MemDeskError):
        retention.apply(agent_id)
    assert services.memory.recall.count(agent_id) == total
    retention.confirm(agent_id)
    assert retention.run_if_due(agent_id) == preview.messages
    assert "Good morning" in [m.search_text for m in services.memory.recall.all(agent_id)]
    assert "I moved to Lisbon" not in [m.search_text for m in services.memory.recall.all(agent_id)]
    assert retention.due(agent_id) is None  # ran just now


def test_retention_keeps_core_memory_archival_and_the_graph(services, old_and_new, retention):
    agent_id = old_and_new.id
    retention.set_days(agent_id, 30)
    retention.confirm(agent_id)
    retention.apply(agent_id)
    assert services.memory.core.get(agent_id, "human").value == "Lives in Lisbon"
    assert [p.text for p in services.memory.archival.list(agent_id)] == ["Notes on Lisbon trams"]
    lisbon = services.memory.graph.find(agent_id, "Lisbon")
    assert lisbon is not None and services.memory.graph.facts(lisbon.id)
    assert services.db.scalar("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'moved'") == 0
    change = services.memory.archival.history.for_agent(agent_id, kind=FORGET_KIND)[0]
    assert change.after.startswith("Forgot ") and "Lisbon" not in change.after


def test_changing_the_days_asks_again(services, old_and_new, retention):
    retention.set_days(old_and_new.id, 30)
    retention.confirm(old_and_new.id)
    assert retention.set_days(old_and_new.id, 10).confirmed is False
    assert retention.set_days(old_and_new.id, 10).confirmed is False
    assert retention.set_days(old_and_new.id, 0).on is False
