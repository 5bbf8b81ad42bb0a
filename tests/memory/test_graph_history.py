"""Knowledge-graph changes in the memory history: each change (fact added, closed, deleted; entity
created, renamed, merged, split, deleted) is recorded with who made it and what caused it, and can
be reverted from the history like a block; the revert is a recorded change itself, survives a
restart, and a conflict (the rows changed since) is refused unless the user confirms it."""

from __future__ import annotations

import pytest

from memdesk.app.services import open_services
from memdesk.core.base.errors import RevertError
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.graph_revert import GRAPH_KINDS
from memdesk.core.memory.revert import Reverter
from memdesk.core.runtime.scripted import call, say


@pytest.fixture
def agent_id(services):
    return services.create_agent("sam").id


@pytest.fixture
def graph(services):
    return services.memory.graph


@pytest.fixture
def history(services):
    return services.memory.core.history


@pytest.fixture
def reverter(services):
    m = services.memory
    return Reverter(m.core.history, m.core, m.archival, m.graph)


def newest(history, agent_id):
    return history.for_agent(agent_id, limit=1)[0]


def graph_changes(history, agent_id):
    return sorted(
        history.for_agent(agent_id, kind="graph_fact") + history.for_agent(agent_id, kind="graph_entity"),
        key=lambda c: -c.id,
    )


def test_an_agents_fact_is_one_change_with_its_message_and_call(services, runtime, make_agent, history):
    agent = make_agent("ana")
    runtime.enqueue(
        call("knowledge_graph_insert", "remember", False, subject="Ann", relation="lives in", object="London"),
        say("ok"),
    )
    agent.send_user_message("My sister Ann lives in London")
    (change,) = graph_changes(history, agent.id)  # the new entities are part of the one change
    assert (change.kind, change.action, change.source, change.after) == (
        "graph_fact",
        "create",
        "agent",
        "Ann lives in London",
    )
    assert services.memory.recall.get(change.message_id).search_text == "My sister Ann lives in London"
    assert services.memory.recall.get(change.step_id).function_name == "knowledge_graph_insert"
    assert change.describe() == "agent created graph fact Ann lives in London"


def test_reverting_an_agents_fact_hides_it_and_the_entities_it_brought(
    services, runtime, make_agent, history, graph, reverter
):
    agent = make_agent("ana")
    runtime.enqueue(
        call("knowledge_graph_insert", "remember", False, subject="Ann", relation="lives in", object="London"),
        say("ok"),
    )
    agent.send_user_message("My sister Ann lives in London")
    made = newest(history, agent.id)
    undone = reverter.revert(made.id)
    assert (
        graph.all_facts(agent.id) == []
        and graph.find(agent.id, "Ann") is None
        and graph.find(agent.id, "London") is None
    )
    assert (undone.source, undone.reverts, undone.action, undone.kind) == ("user", made.id, "delete", "graph_fact")
    assert undone.describe() == "user reverted graph fact Ann lives in London"
    reverter.revert(undone.id)  # the revert is a change like any other: reverting it brings the fact back
    assert [(f.subject, f.relation, f.object) for f in graph.all_facts(agent.id)] == [("Ann", "lives in", "London")]


def test_reverting_a_newer_fact_reopens_the_one_it_closed(services, agent_id, graph, history, reverter, clock):
    ann, london, paris = (
        graph.resolve(agent_id, n, "place" if n != "Ann" else "person") for n in ("Ann", "London", "Paris")
    )
    graph.add_fact(agent_id, ann, "lives in", london, author="extractor")
    clock.advance(days=3)
    graph.add_fact(agent_id, ann, "lives in", paris, author="extractor")
    closed, made = history.for_agent(agent_id, kind="graph_fact")[:2]
    assert closed.after.startswith("Ann lives in London (until") and made.after == "Ann lives in Paris"
    reverter.revert(made.id)
    current = [(f.object, f.current) for f in graph.facts(ann)]
    assert current == [("London", True)]


def test_a_rename_reverts_to_the_old_name_and_author(agent_id, graph, history, reverter):
    bob = graph.resolve(agent_id, "Bob", "person")
    graph.rename(bob, "Robert")
    renamed = newest(history, agent_id)
    assert (renamed.kind, renamed.source, renamed.before, renamed.after) == ("graph_entity", "user", "Bob", "Robert")
    reverter.revert(renamed.id)
    entity = graph.entity(bob)
    assert (entity.name, entity.author) == ("Bob", "extractor")
    assert graph.find(agent_id, "Robert") is None


def test_a_merge_reverts_to_two_entities_and_reopens_the_facts_it_closed(agent_id, graph, history, reverter, clock):
    ann, annie = graph.resolve(agent_id, "Ann", "person"), graph.resolve(agent_id, "Annie Lee", "person")
    london, paris = graph.resolve(agent_id, "London", "place"), graph.resolve(agent_id, "Paris", "place")
    graph.add_fact(agent_id, ann, "lives in", london, author="extractor")
    clock.advance(days=1)
    graph.add_fact(agent_id, annie, "lives in", paris, author="extractor")
    graph.merge(annie, ann)
    merged = newest(history, agent_id)
    assert merged.after == "Annie Lee (an alias of Ann)" and [
        f.object for f in graph.facts(ann, current_only=True)
    ] == ["Paris"]
    reverter.revert(merged.id)
    assert graph.entity(annie).name == "Annie Lee" and graph.entity(ann).aliases == ()
    assert [f.object for f in graph.facts(ann, current_only=True)] == ["London"]


def test_split_delete_and_fact_edits_revert(agent_id, graph, history, reverter):
    ann, annie = graph.resolve(agent_id, "Ann", "person"), graph.resolve(agent_id, "Annie Lee", "person")
    graph.merge(annie, ann)
    graph.split(annie)
    assert newest(history, agent_id).before == "Annie Lee (an alias of Ann)"
    reverter.revert(newest(history, agent_id).id)
    assert graph.entity(ann).aliases == ("Annie Lee",)
    fact, _edit = graph.insert_fact(agent_id, "Ann", "likes", "chess", author="user")
    graph.edit_fact(fact.id, relation="plays")
    reverter.revert(newest(history, agent_id).id)
    assert graph.fact(fact.id).relation == "likes"
    graph.delete_fact(fact.id)
    assert graph.fact(fact.id) is None
    reverter.revert(newest(history, agent_id).id)
    assert graph.fact(fact.id) is not None
    graph.delete_entity(ann)
    deleted = newest(history, agent_id)
    assert (deleted.action, deleted.before, deleted.after) == ("delete", "Ann", None)
    restored = reverter.revert(deleted.id)
    assert restored.action == "create" and graph.find(agent_id, "Ann") is not None and graph.fact(fact.id) is not None


def test_a_revert_over_a_later_change_is_a_conflict_the_user_must_confirm(agent_id, graph, history, reverter, clock):
    ann, london, paris = (
        graph.resolve(agent_id, n, "person" if n == "Ann" else "place") for n in ("Ann", "London", "Paris")
    )
    fact = graph.add_fact(agent_id, ann, "lives in", london, author="extractor")
    graph.edit_fact(fact, relation="lived in")  # the user's correction ...
    correction = newest(history, agent_id)
    clock.advance(days=1)
    graph.add_fact(agent_id, ann, "lived in", paris, author="extractor")  # ... then the extractor closed that fact
    plan = reverter.plan(correction.id)
    assert plan.conflict and "Reverting now would" in plan.explain()
    with pytest.raises(RevertError, match="Reverting now would"):
        reverter.apply(plan)
    assert graph.fact(fact).relation == "lived in"  # nothing was overwritten
    reverter.apply(reverter.plan(correction.id), force=True)
    assert graph.fact(fact).relation == "lives in"


def test_the_knowledge_panels_undo_goes_back_edit_by_edit_and_survives_a_restart(
    services, agent_id, graph, reverter, clock
):
    bob = graph.resolve(agent_id, "Bob", "person")
    graph.rename(bob, "Robert")
    graph.insert_fact(agent_id, "Robert", "likes", "chess", author="user")
    graph.resolve(agent_id, "Siemens", "org", author="extractor")  # not the user's: Undo skips it
    reverter.undo_last_of(agent_id, GRAPH_KINDS)
    assert graph.find(agent_id, "chess") is None and graph.find(agent_id, "Robert") is not None
    services.close()
    reopened = open_services(Paths.from_environment(), embedder=HashingEmbedder(), clock=clock)
    try:
        m = reopened.memory
        again = Reverter(m.core.history, m.core, m.archival, m.graph)
        again.undo_last_of(agent_id, GRAPH_KINDS)
        assert m.graph.find(agent_id, "Bob") is not None and m.graph.find(agent_id, "Robert") is None
        with pytest.raises(RevertError, match="nothing to undo"):
            again.undo_last_of(agent_id, GRAPH_KINDS)
        assert m.graph.find(agent_id, "Siemens") is not None
    finally:
        reopened.close()


def test_a_graph_change_without_rows_is_listed_but_cannot_be_reverted(services, agent_id, history, reverter):
    change_id = history.record(agent_id, "graph_fact", 3, "create", source="extractor", after="A likes B")
    plan = reverter.plan(change_id)
    assert not plan.possible and "without the rows it touched" in plan.blocked


def test_a_revert_that_would_take_a_name_in_use_is_refused(agent_id, graph, history, reverter):
    bob = graph.resolve(agent_id, "Bob", "person")
    graph.rename(bob, "Robert")
    renamed = newest(history, agent_id)
    graph.resolve(agent_id, "Bob", "person")  # the extractor meets "Bob" again: a new entity takes the name
    with pytest.raises(RevertError, match="another entity is called 'Bob'"):
        reverter.revert(renamed.id)
    assert graph.entity(bob).name == "Robert"
