"""Every change to what an agent remembers is recorded: who, when, before and after, and why."""

from __future__ import annotations

import pytest

from memdesk.core.memory.history import Cause
from memdesk.core.runtime.scripted import call, say


def changes_of(services, agent_id, **kind):
    return services.memory.core.history.for_agent(agent_id, **kind)


def test_an_agent_edit_records_the_message_and_the_call_that_caused_it(services, runtime, make_agent):
    agent = make_agent(human="Name: Ada")
    runtime.enqueue(call("core_memory_append", "remember", False, label="human", content="Likes tea"), say("ok"))
    agent.send_user_message("I like tea")
    change = services.memory.core.history.latest_for_block(agent.id, "human")
    assert (change.source, change.action, change.kind) == ("agent", "update", "block")
    assert (change.before, change.after) == ("Name: Ada", "Name: Ada\nLikes tea")
    cause = services.memory.recall.get(change.message_id)
    assert cause.kind == "user_message" and "I like tea" in cause.content
    step = services.memory.recall.get(change.step_id)
    assert step.kind == "assistant_call" and step.function_name == "core_memory_append"
    assert change.describe() == "agent updated human"


def test_a_chained_step_points_at_its_own_call(services, runtime, make_agent):
    agent = make_agent(human="")
    runtime.enqueue(
        call("core_memory_append", "first", True, label="human", content="A"),
        call("core_memory_replace", "second", False, label="human", old_content="A", new_content="B"),
        say("done"),
    )
    agent.send_user_message("go")
    second, first = changes_of(services, agent.id, kind="block")[:2]
    assert services.memory.recall.get(first.step_id).function_name == "core_memory_append"
    assert services.memory.recall.get(second.step_id).function_name == "core_memory_replace"
    assert services.memory.recall.get(second.message_id).kind == "heartbeat"  # what the second step answered
    assert first.step_id < second.message_id < second.step_id


def test_a_failed_edit_records_nothing(services, runtime, make_agent):
    agent = make_agent(human="x")
    before = services.memory.core.history.count(agent.id)
    runtime.enqueue(
        call("core_memory_replace", "oops", False, label="human", old_content="nope", new_content="y"),
        say("ok"),
        say("ok"),
    )
    agent.send_user_message("go")
    assert services.memory.core.history.count(agent.id) == before


def test_user_edits_settings_creation_and_removal_are_recorded(services):
    core = services.memory.core
    record = services.create_agent("sam", human="Name: Ada")
    created = {c.label for c in changes_of(services, record.id) if c.action == "create"}
    assert created == {"persona", "human"}  # a new agent's blocks are its first history
    core.set_value(record.id, "human", "Name: Ada Lovelace")
    core.configure(record.id, "human", read_only=True, limit=3000)
    core.create(record.id, "projects", "MemDesk")
    core.delete(record.id, "projects")
    latest = changes_of(services, record.id)
    deleted, made, configured, edited = latest[:4]
    assert (edited.source, edited.action, edited.before, edited.after) == (
        "user",
        "update",
        "Name: Ada",
        "Name: Ada Lovelace",
    )
    assert edited.message_id is None and edited.step_id is None
    assert configured.action == "configure"
    assert configured.before_meta == {
        "limit": 2000,
        "description": "What you know about the user: facts they share with you, one per line.",
        "read_only": False,
    }
    assert configured.after_meta["read_only"] is True and configured.after_meta["limit"] == 3000
    assert (made.action, made.after) == ("create", "MemDesk")
    assert (deleted.action, deleted.before, deleted.after) == ("delete", "MemDesk", None)
    assert deleted.before_meta["position"] == 2


def test_saving_the_same_text_is_not_a_change(services):
    record = services.create_agent("sam", human="same")
    count = services.memory.core.history.count(record.id)
    services.memory.core.set_value(record.id, "human", "same")
    assert services.memory.core.history.count(record.id) == count


def test_other_sources_write_through_the_same_methods(services):
    record = services.create_agent("sam", human="Ada; Ada")
    services.memory.core.set_value(
        record.id, "human", "Ada", source="consolidation", cause=Cause(note="merged duplicates")
    )
    change = services.memory.core.history.latest_for_block(record.id, "human")
    assert (change.source, change.note) == ("consolidation", "merged duplicates")
    assert services.memory.core.get(record.id, "human").updated_by == "consolidation"
    with pytest.raises(ValueError):
        services.memory.core.set_value(record.id, "human", "x", source="gremlin")
    assert services.memory.core.get(record.id, "human").value == "Ada"  # the bad write rolled back whole


def test_archival_passages_record_which_call_inserted_them_and_later_edits(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(call("archival_memory_insert", "save", False, content="Ada's cat is called Pixel."), say("saved"))
    agent.send_user_message("my cat is Pixel")
    inserted = changes_of(services, agent.id, kind="passage")[0]
    assert (inserted.source, inserted.action, inserted.after) == ("agent", "create", "Ada's cat is called Pixel.")
    assert services.memory.recall.get(inserted.step_id).function_name == "archival_memory_insert"
    archival = services.memory.archival
    archival.update_text(inserted.target_id, "Ada's cat is called Pixel; it is grey.")
    archival.delete([inserted.target_id])
    deleted, edited = changes_of(services, agent.id, kind="passage")[:2]
    assert (edited.source, edited.before, edited.after) == (
        "user",
        "Ada's cat is called Pixel.",
        "Ada's cat is called Pixel; it is grey.",
    )
    assert (deleted.action, deleted.before) == ("delete", "Ada's cat is called Pixel; it is grey.")
    assert deleted.before_meta["tags"] == [] and "created_at" in deleted.before_meta
    assert [c.id for c in services.memory.core.history.for_target(agent.id, "passage", inserted.target_id)] == [
        deleted.id,
        edited.id,
        inserted.id,
    ]


def test_graph_changes_use_the_same_api(services):
    record = services.create_agent("sam")
    history = services.memory.core.history
    fact = history.record(
        record.id,
        "graph_fact",
        7,
        "create",
        source="extractor",
        after="Ada -[owns]-> Pixel",
        label="Ada owns Pixel",
        cause=Cause(message_id=None, note="spaCy extractor"),
    )
    assert history.get(fact).describe() == "extractor created graph fact Ada owns Pixel"
    assert [c.kind for c in history.for_agent(record.id, kind="graph_fact")] == ["graph_fact"]


def test_history_is_bounded_by_a_setting(services):
    record = services.create_agent("sam", human="")
    services.settings_store.set("history_max_changes", 5)
    for number in range(8):
        services.memory.core.set_value(record.id, "human", f"v{number}")
    kept = changes_of(services, record.id)
    assert len(kept) == 5 and kept[0].after == "v7" and kept[-1].after == "v3"
    services.settings_store.set("history_max_changes", 0)  # 0: keep all
    for number in range(8, 12):
        services.memory.core.set_value(record.id, "human", f"v{number}")
    assert services.memory.core.history.count(record.id) == 9


def test_deleting_an_agent_deletes_its_history(services):
    record = services.create_agent("sam")
    services.memory.core.set_value(record.id, "human", "x")
    services.agents.delete(record.id)
    assert services.db.scalar("SELECT COUNT(*) FROM memory_history WHERE agent_id = ?", (record.id,)) == 0


def test_consolidation_records_its_changes_as_its_own(services, runtime, make_agent):
    from dataclasses import replace

    from memdesk.app.agents import open_consolidator
    from memdesk.core.consolidation.prompt import FINISH

    agent = make_agent("ana", human="Name: Ana")
    for text in ("I moved to Porto", "I drink green tea now", "I work nights"):
        runtime.enqueue(say("ok"))
        agent.send_user_message(text)
    runtime.enqueue(
        call("core_memory_append", "a lasting fact", label="human", content="Lives in Porto."),
        call("archival_memory_insert", "an event", content="Ana moved to Porto."),
        call(FINISH, "done"),
    )
    settings = replace(services.settings, consolidation="apply")
    open_consolidator(services, agent.record, runtime, settings=settings).run()
    block, passage = (services.memory.core.history.for_agent(agent.id, kind=k)[0] for k in ("block", "passage"))
    assert (block.source, block.after) == ("consolidation", "Name: Ana\nLives in Porto.")
    assert passage.source == "consolidation" and block.note == "consolidation: core_memory_append"
    assert services.memory.core.get(agent.id, "human").updated_by == "consolidation"


def test_knowledge_graph_changes_are_recorded_with_their_author_and_message(services, runtime, make_agent):
    agent = make_agent("ana")
    runtime.enqueue(say("ok"))
    agent.send_user_message("I live in Lisbon")
    said = next(m for m in services.memory.recall.all(agent.id) if m.kind == "user_message")
    graph = services.memory.graph
    history = services.memory.core.history
    ana = graph.resolve(agent.id, "Ana", "person", author="extractor")
    lisbon = graph.resolve(agent.id, "Lisbon", "place", author="extractor")
    porto = graph.resolve(agent.id, "Porto", "place", author="extractor")
    graph.add_fact(agent.id, ana, "lives in", lisbon, author="extractor", message_id=said.id)
    graph.add_fact(agent.id, ana, "lives in", porto, author="extractor", message_id=said.id)  # closes the Lisbon fact
    closed, made = history.for_agent(agent.id, kind="graph_fact")[:2]
    assert (made.source, made.action, made.after, made.message_id) == (
        "extractor",
        "create",
        "Ana lives in Porto",
        said.id,
    )
    assert (
        closed.action == "update"
        and closed.before == "Ana lives in Lisbon"
        and closed.after.startswith("Ana lives in Lisbon (until")
    )
    assert "closed by the newer fact" in closed.note
    assert [c.after for c in history.for_agent(agent.id, kind="graph_entity")] == ["Porto", "Lisbon", "Ana"]
    edit = graph.rename(ana, "Ana Lima")
    renamed = history.for_agent(agent.id, kind="graph_entity")[0]
    assert (renamed.source, renamed.before, renamed.after) == ("user", "Ana", "Ana Lima")
    graph.undo(edit)
    assert history.for_agent(agent.id, kind="graph_entity")[0].note == "undo in the Knowledge panel"
    fact = graph.all_facts(agent.id)[0]
    graph.delete_fact(fact.id)
    assert history.for_agent(agent.id, kind="graph_fact")[0].action == "delete"


def test_the_bound_is_per_kind_so_the_extractor_cannot_push_blocks_out(services):
    record = services.create_agent("sam", human="")
    services.settings_store.set("history_max_changes", 3)
    services.memory.core.set_value(record.id, "human", "kept")
    for number in range(6):
        services.memory.graph.resolve(record.id, f"Person Number{number}", "person", author="extractor")
    history = services.memory.core.history
    assert len(history.for_agent(record.id, kind="graph_entity")) == 3
    assert history.latest_for_block(record.id, "human").after == "kept"
