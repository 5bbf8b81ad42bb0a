"""Sync between devices, through a folder: what each kind of memory does when devices change it."""

from __future__ import annotations

import json

from memdesk.app.agents import open_agent
from memdesk.core.agent.conversation_view import conversation_entries, conversation_markdown
from memdesk.core.memory.history import BLOCK, SYNC
from memdesk.core.runtime.scripted import ScriptedRuntime
from memdesk.core.storage.memory_copy import copy_to_memory
from memdesk.core.sync import setup
from memdesk.core.sync.folder import SyncFolder


def two(fleet):
    laptop, desktop = fleet.device("laptop"), fleet.device("desktop", skew_minutes=-90)
    for device in (laptop, desktop):
        device.agent()
        fleet.pair(device)
    fleet.exchange()
    return laptop, desktop


def test_a_fact_told_on_one_device_is_found_by_the_others_memory_search(fleet):
    laptop, desktop = two(fleet)
    laptop.tell("My sister Ines plays the cello in Porto")
    fleet.exchange()
    page = desktop.services.memory.recall.search_text(desktop.agent(), "cello")
    assert [m.content for m in page.hits] == ["My sister Ines plays the cello in Porto"]
    assert laptop.digest() == desktop.digest()
    assert desktop.fts_agrees()


def test_memory_from_before_pairing_reaches_the_other_device(fleet):
    laptop = fleet.device("laptop")
    laptop.tell("I grew up in Braga")
    laptop.note("The garden gate code is 4711")
    laptop.append("human", "Works as a nurse")
    fleet.pair(laptop)
    desktop = fleet.device("desktop")
    fleet.pair(desktop)
    fleet.exchange()
    assert "Works as a nurse" in desktop.block("human")
    assert desktop.services.memory.archival.search(desktop.agent(), "gate code").hits
    # its vector was made on the desktop, by the desktop's own embedder
    assert desktop.db.scalar("SELECT COUNT(*) FROM passages WHERE embedded = 1") == 1
    assert desktop.db.scalar("SELECT model_id FROM embedding_space") == desktop.services.embedder.model_id
    assert laptop.digest() == desktop.digest()


def test_the_same_agent_made_on_both_devices_becomes_one(fleet):
    laptop, desktop = two(fleet)
    assert [a.name for a in laptop.services.agents.list()] == ["Sam"]
    assert [a.name for a in desktop.services.agents.list()] == ["Sam"]
    uids = {d.db.scalar("SELECT uid FROM agents") for d in (laptop, desktop)}
    assert len(uids) == 1


def test_two_devices_editing_one_block_keep_both_lines_and_both_parents_in_history(fleet):
    laptop, desktop = two(fleet)
    laptop.append("human", "Lives in Porto")
    desktop.append("human", "Likes green tea")
    fleet.exchange()
    for device in (laptop, desktop):
        text = device.block("human")
        assert "Lives in Porto" in text and "Likes green tea" in text
    assert laptop.block("human") == desktop.block("human")
    merged = [
        c
        for c in laptop.services.memory.archival.history.for_agent(laptop.agent(), kind=BLOCK)
        if c.source == SYNC and c.action == "update"
    ]
    parents = merged[0].after_meta["parents"]
    assert len(parents) == 2 and {p["text"].splitlines()[-1] for p in parents} == {"Lives in Porto", "Likes green tea"}
    assert setup.status(laptop.db)["conflicts"] == []


def test_changes_to_the_same_line_are_kept_both_and_shown_as_a_conflict(fleet):
    laptop, desktop = two(fleet)
    laptop.append("human", "Favourite colour: blue")
    fleet.exchange()
    core_l, core_d = laptop.services.memory.core, desktop.services.memory.core
    core_l.replace(laptop.agent(), "human", "Favourite colour: blue", "Favourite colour: green", source="user")
    core_d.replace(desktop.agent(), "human", "Favourite colour: blue", "Favourite colour: red", source="user")
    fleet.exchange()
    for device in (laptop, desktop):
        assert "green" in device.block("human") and "red" in device.block("human")
        conflicts = setup.status(device.db)["conflicts"]
        assert [c["label"] for c in conflicts] == ["human"]
    # the user resolves it on one device: the edit reaches the other and the conflict closes there
    value = laptop.block("human").replace("Favourite colour: red\n", "").replace("\nFavourite colour: red", "")
    core_l.set_value(laptop.agent(), "human", value)
    fleet.exchange()
    assert desktop.block("human") == laptop.block("human") and "red" not in desktop.block("human")


def conflict_events(device) -> list[dict]:
    """The memory_conflict events the device's model reads in the prompt of its next step."""
    record = device.services.agents.get(device.agent())
    prompt = open_agent(device.services, record, ScriptedRuntime(context_window=16384)).prompt_prefix()
    events = []
    for message in prompt:
        try:
            data = json.loads(message.content)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("type") == "memory_conflict":
            events.append(data)
    return events


def test_a_conflict_is_told_to_the_model_once_on_every_device_and_closes_when_edited(fleet):
    laptop, desktop = two(fleet)
    laptop.append("human", "Favourite colour: blue")
    fleet.exchange()
    phone = fleet.device("phone")  # joins now, and syncs only once the conflict is resolved
    fleet.pair(phone)
    core_l, core_d = laptop.services.memory.core, desktop.services.memory.core
    assert conflict_events(laptop) == []
    core_l.replace(laptop.agent(), "human", "Favourite colour: blue", "Favourite colour: green", source="user")
    core_d.replace(desktop.agent(), "human", "Favourite colour: blue", "Favourite colour: red", source="user")
    for device in (laptop, desktop, laptop):
        device.sync()
    for device in (laptop, desktop):
        [told] = conflict_events(device)
        assert told["block"] == "human" and "same lines" in told["reason"]
        entries = conversation_entries(device.services.memory.recall.all(device.agent()))
        assert [e.kind for e in entries if "both versions are kept" in e.text] == ["event"]  # the user sees it
    # the model (or the user) rewrites the block on one device: the conflict closes everywhere
    value = desktop.block("human").replace("Favourite colour: red\n", "").replace("\nFavourite colour: red", "")
    core_d.set_value(desktop.agent(), "human", value)
    fleet.exchange()
    for device in (laptop, desktop, phone):
        assert setup.status(device.db)["conflicts"] == []
    # the phone never held the two edits apart, yet its model reads the same one event
    assert [len(conflict_events(d)) for d in (laptop, desktop, phone)] == [1, 1, 1]
    assert laptop.digest() == desktop.digest() == phone.digest()


def test_a_message_written_earlier_on_another_device_stands_in_its_place(fleet):
    laptop, desktop = fleet.device("laptop"), fleet.device("desktop")
    for device in (laptop, desktop):
        device.agent()
        fleet.pair(device)
    fleet.exchange()
    desktop.tell("A: the desktop at nine")
    desktop.sync()
    laptop.clock.advance(minutes=5)
    laptop.tell("B: the laptop, offline, at five past")
    desktop.clock.advance(minutes=10)
    desktop.tell("C: the desktop at ten past")
    fleet.exchange()
    for device in (laptop, desktop):
        recall, agent = device.services.memory.recall, device.agent()
        told = [m for m in recall.newest(agent, 50) if m.content[1:2] == ":"]
        assert [m.content[0] for m in told] == ["A", "B", "C"]
        # page by page, as the window loads older pages
        pages, before = [], None
        while page := [m for m in recall.newest(agent, 1, before_id=before) if m.content[1:2] == ":"]:
            pages.append(page[0].content[0])
            before = page[0].id
        assert pages == ["C", "B", "A"]
        assert not recall.any_before(agent, told[0].id)
        exported = conversation_markdown(device.services.memory, agent)
        assert exported.index("A: the") < exported.index("B: the") < exported.index("C: the")
    # arrival order on the desktop was A, C, B: the laptop's message arrived last
    arrived = [m.content[0] for m in desktop.services.memory.recall.all(desktop.agent()) if m.content[1:2] == ":"]
    assert arrived == ["A", "C", "B"]


def current_facts(device) -> set[tuple[str, str, str, str]]:
    graph = device.services.memory.graph
    return {(f.subject, f.relation, f.object, f.author) for f in graph.all_facts(device.agent()) if f.valid_to is None}


def test_facts_the_agent_and_the_user_wrote_travel_and_close_by_validity_windows(fleet):
    laptop, desktop = two(fleet)
    graph_l, graph_d = laptop.services.memory.graph, desktop.services.memory.graph
    graph_l.insert_fact(laptop.agent(), "Ines", "lives in", "Lisbon", author="agent")
    fleet.exchange()
    assert ("Ines", "lives in", "Lisbon", "agent") in current_facts(desktop)
    # a newer fact on the desktop closes it everywhere, kept with its window, not deleted
    desktop.clock.advance(hours=2)
    graph_d.insert_fact(desktop.agent(), "Ines", "lives in", "Porto", author="user")
    fleet.exchange()
    for device in (laptop, desktop):
        assert ("Ines", "lives in", "Porto", "user") in current_facts(device)
        assert ("Ines", "lives in", "Lisbon", "agent") not in current_facts(device)
        lisbon = [f for f in device.services.memory.graph.all_facts(device.agent()) if f.object == "Lisbon"]
        assert len(lisbon) == 1 and lisbon[0].valid_to is not None
        assert [e.name for e in device.services.memory.graph.entities(device.agent(), text="Ines")] == ["Ines"]
    # the user's edit and delete travel too
    [porto] = [f for f in graph_l.all_facts(laptop.agent()) if f.object == "Porto"]
    graph_l.edit_fact(porto.id, relation="moved to")
    fleet.exchange()
    assert ("Ines", "moved to", "Porto", "user") in current_facts(desktop)
    [moved] = [f for f in graph_d.all_facts(desktop.agent()) if f.object == "Porto"]
    graph_d.delete_fact(moved.id)
    fleet.exchange()
    assert not any(f[2] == "Porto" for f in current_facts(laptop))
    # a device that joins late gets them from the snapshot
    laptop.engine.compact()
    desktop.engine.compact()
    late = fleet.device("late")
    fleet.pair(late)
    late.sync()
    lisbon = [f for f in late.services.memory.graph.all_facts(late.agent()) if f.object == "Lisbon"]
    assert len(lisbon) == 1 and lisbon[0].valid_to is not None


def test_messages_are_appended_once_whatever_the_order_and_copies(fleet):
    laptop, desktop = two(fleet)
    laptop.tell("first")
    laptop.sync()
    laptop.tell("second")
    laptop.sync()
    desktop.sync()
    desktop.sync()
    count = desktop.db.scalar("SELECT COUNT(*) FROM messages WHERE content IN ('first', 'second')")
    assert count == 2


def test_a_forget_wins_over_a_message_written_meanwhile_on_another_device(fleet):
    laptop, desktop = two(fleet)
    laptop.tell("Carlota called about the trip")
    fleet.exchange()
    laptop.forget("Carlota")
    desktop.tell("Carlota will bring the tent")  # before desktop hears of the forget
    fleet.exchange()
    for device in (laptop, desktop):
        assert not any("carlota" in text.casefold() for text in device.texts()), device.name
    assert laptop.digest() == desktop.digest()


def test_a_forget_meeting_two_devices_appends_leaves_every_device_the_same_block(fleet):
    """The device that had not forgotten yet merges the two appends against the old line (its
    versions still hold it), then forgets: its block must end as the versions without the line
    say, the text every other device shows, not as its own merge did before the forget."""
    laptop, desktop = two(fleet)
    laptop.append("human", "Bruno likes tea")
    fleet.exchange()
    laptop.forget("Bruno")
    desktop.append("human", "Alice likes rain")  # below Bruno's line: desktop has not heard yet
    laptop.clock.advance(minutes=10)  # the laptop's edit is the later one: merged second
    laptop.append("human", "Alice likes tea")
    fleet.exchange()
    assert laptop.block("human") == desktop.block("human")
    assert sorted(desktop.block("human").split("\n")) == ["Alice likes rain", "Alice likes tea"]
    assert laptop.digest() == desktop.digest()


def test_a_private_chat_never_reaches_the_sync_folder(fleet):
    laptop, desktop = two(fleet)
    private = copy_to_memory(laptop.db)
    try:
        private.execute(
            "INSERT INTO messages(agent_id, created_at, role, kind, content, search_text) VALUES"
            " (?, '2026-11-30T09:00:00+00:00', 'user', 'user_message', 'a private secret', 'a private secret')",
            (laptop.agent(),),
        )
    finally:
        private.close()
    laptop.sync()
    desktop.sync()
    assert not desktop.db.scalar("SELECT COUNT(*) FROM messages WHERE content = 'a private secret'")
    assert laptop.db.scalar("SELECT COUNT(*) FROM sync_outbox") == 0


def test_device_local_state_does_not_travel(fleet):
    laptop, desktop = two(fleet)
    laptop.services.agents.update(laptop.agent(), summary="laptop's own summary", context_start_id=99)
    laptop.services.settings_store.set("user_name", "Laptop User")
    laptop.tell("hello")
    fleet.exchange()
    record = desktop.services.agents.get(desktop.agent())
    assert record.summary != "laptop's own summary" and record.context_start_id != 99
    assert desktop.services.settings.user_name != "Laptop User"


def test_a_device_that_joins_late_starts_from_a_snapshot_after_compaction(fleet):
    laptop, desktop = two(fleet)
    for n in range(5):
        laptop.tell(f"story number {n}")
        laptop.sync()
    desktop.sync()
    laptop.sync()  # reads desktop's acknowledgement
    assert laptop.engine.compact() >= 5
    folder = SyncFolder(fleet.folder)
    assert folder.log_numbers(setup.status(laptop.db)["device"]["id"]) == []
    late = fleet.device("tablet")
    fleet.pair(late)
    fleet.exchange()
    assert late.db.scalar("SELECT COUNT(*) FROM messages WHERE content LIKE 'story number %'") == 5
    assert late.digest() == laptop.digest() == desktop.digest()


def test_encrypted_stores_sync_too(fleet):
    laptop = fleet.device("laptop", key="first passphrase")
    desktop = fleet.device("desktop", key="second passphrase")
    for device in (laptop, desktop):
        device.agent()
        fleet.pair(device)
    laptop.tell("The boat is called Gaivota")
    fleet.exchange()
    assert desktop.services.memory.recall.search_text(desktop.agent(), "Gaivota").hits
    assert laptop.digest() == desktop.digest()
