"""Conversations imported from other assistants travel: on every device they are in the same
conversations (never the agent's own chat), with their export ids and import time, and importing
the same export on another device adds nothing."""

from __future__ import annotations

from pathlib import Path

from memdesk.core.transfer.history.importer import HistoryImport

DATA = Path(__file__).resolve().parent.parent / "data" / "history"


def imported(device) -> list[tuple]:
    return device.db.query(
        "SELECT m.uid, c.source, c.external_id, c.title, m.external_id, m.imported_at, m.content FROM messages m"
        " JOIN imported_conversations c ON c.id = m.conversation_id ORDER BY m.uid"
    )


def test_imported_conversations_travel_into_the_same_conversations_and_import_once(fleet):
    laptop, desktop = fleet.device("laptop"), fleet.device("desktop")
    for device in (laptop, desktop):
        device.agent()
        fleet.pair(device)
    fleet.exchange()
    export = DATA / "chatgpt_conversations.json"
    HistoryImport.start(laptop.services.memory, laptop.agent(), export).run()
    laptop.clock.advance(days=3)
    fleet.exchange()

    carried = imported(laptop)
    assert carried and imported(desktop) == carried  # conversation, export ids and import time alike
    recall = desktop.services.memory.recall
    assert recall.imported_count(desktop.agent()) == len(carried)
    own_chat = {m.content for m in recall.all(desktop.agent())}
    assert not own_chat & {row[6] for row in carried}  # never in the agent's own chat
    counts = desktop.db.query("SELECT external_id, message_count FROM imported_conversations ORDER BY external_id")
    assert counts == laptop.db.query(
        "SELECT external_id, message_count FROM imported_conversations ORDER BY external_id"
    )

    # the same export imported on the desktop adds nothing, and nothing new is sent
    job = HistoryImport.start(desktop.services.memory, desktop.agent(), export)
    assert job.run().messages_added == 0
    fleet.exchange()
    assert imported(desktop) == imported(laptop) == carried
    assert laptop.digest() == desktop.digest()

    # a device that joins late gets them from the snapshot
    laptop.engine.compact()
    desktop.engine.compact()
    late = fleet.device("late")
    fleet.pair(late)
    late.sync()
    assert imported(late) == carried


def test_an_export_imported_on_two_devices_before_they_sync_is_kept_once(fleet):
    laptop, desktop = fleet.device("laptop"), fleet.device("desktop")
    for device in (laptop, desktop):
        device.agent()
        fleet.pair(device)
    fleet.exchange()
    export = DATA / "chatgpt_conversations.json"
    for device in (laptop, desktop):
        HistoryImport.start(device.services.memory, device.agent(), export).run()
    assert {r[0] for r in imported(laptop)}.isdisjoint(r[0] for r in imported(desktop))  # ids of their own
    fleet.exchange()
    assert [r[:5] for r in imported(laptop)] == [r[:5] for r in imported(desktop)]  # one id each, the same
    assert len(imported(laptop)) == len({(r[2], r[4]) for r in imported(laptop)})
    assert laptop.digest() == desktop.digest()
