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


@pytest.fixture
def quoted(services, clock, old_and_new, runtime):
    """Today, the old "I moved to Lisbon" quoted by a conversation search's result and by automatic
    recall's memories event (with its recall_shown row), beside a passage."""
    from memdesk.core.agent.recall.events import render_event
    from memdesk.core.agent.recall.packing import render_lines
    from memdesk.core.agent.recall.shown import ShownMemories
    from memdesk.core.agent.recall.sources import Memory
    from memdesk.core.runtime.scripted import call

    agent = old_and_new
    old = next(m for m in services.memory.recall.all(agent.id) if m.kind == "user_message")
    assert old.search_text == "I moved to Lisbon"
    runtime.enqueue(call("conversation_search", "look it up", False, query="Lisbon"), say("You moved to Lisbon."))
    agent.send_user_message("Where did I move?")
    shown = [
        Memory("conversation", f"message:{old.id}", old.search_text, old.created_at, "you"),
        Memory("archival", "passage:1", "Notes on Lisbon trams", None, "notes"),
    ]
    with services.db.transaction():
        event = services.memory.recall.add(
            agent.id,
            role="user",
            kind="memories",
            content=render_event(render_lines([(m, m.text) for m in shown], "conversation")),
            created_at=clock.now(),
        )
        ShownMemories(services.db).record(agent.id, event.id, shown)
    newer = [m for m in services.memory.recall.all(agent.id) if m.created_at > old.created_at]
    assert sum("I moved to Lisbon" in m.content for m in newer) == 2  # the search's result and the event
    return agent, event


def test_newer_recall_lines_and_search_results_lose_what_they_quoted(services, quoted):
    """Issue 35 item 9: an expired message lived on where newer rows quoted it (automatic recall's
    memories event and its recall_shown rows, a conversation search's result), renewed with each
    recall. They lose the quote; the rest of what they say stays."""
    from memdesk.app.operations import open_retention

    agent, event = quoted
    retention = open_retention(services)
    retention.set_days(agent.id, 30)
    retention.confirm(agent.id)
    retention.apply(agent.id)

    kept = {m.id: m.content for m in services.memory.recall.all(agent.id)}
    assert not [content for content in kept.values() if "I moved to Lisbon" in content]
    assert "Notes on Lisbon trams" in kept[event.id] and "[forgotten]" in kept[event.id]
    refs = [r[0] for r in services.db.query("SELECT ref FROM recall_shown WHERE agent_id = ?", (agent.id,))]
    assert refs == ["passage:1"]
    assert b"I moved to Lisbon" not in services.paths.database.read_bytes()


def test_the_retention_preview_counts_the_quotes_and_says_how_long_backups_keep_them(services, quoted):
    from memdesk.app.operations import open_retention

    agent, _event = quoted
    retention = open_retention(services)
    retention.set_days(agent.id, 30)
    preview = retention.preview(agent.id)
    described = preview.describe()
    assert "3 newer automatic-recall lines and search results quoting them are blanked too" in described
    assert "Backups taken before still hold them for up to 4 weeks" in described
