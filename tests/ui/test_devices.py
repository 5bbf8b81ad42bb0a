"""File > Devices… in the real window (offscreen): start a sync folder and show its code; another
device pairs with it, tells a fact and edits a block; the window syncs on its own and shows both
without a restart, lists the device, keeps a conflict in view and in the conversation, and
removes the device with a new pairing code."""

from __future__ import annotations

import re

from memdesk.core.sync import setup
from testing.sync_devices import Fleet


def test_a_fact_told_on_another_device_shows_in_the_window_without_a_restart(
    make_window, roomy_runtime, qtbot, settle, tmp_path, migrated_store
):
    window = make_window(roomy_runtime)
    folder = tmp_path / "Sync" / "MemDesk sync"
    dialog = window.sync.open_dialog()
    assert dialog.start_button.isVisible() and not dialog.sync_button.isEnabled()
    window.sync.start_folder(folder)
    qtbot.waitUntil(lambda: dialog.code_label.isVisible(), timeout=15_000)
    code = re.search(r"Pairing code: (\S+)", dialog.code_label.text()).group(1)
    qtbot.waitUntil(lambda: dialog.sync_button.isEnabled(), timeout=15_000)

    fleet = Fleet(tmp_path / "others", migrated_store)
    try:
        phone = fleet.device("phone")
        phone.agent(window.services.agents.get(window.state.agent_id).name)
        setup.join(phone.db, phone.clock, folder, code, "phone")
        phone.sync()
        agent = window.services.agents.get(window.state.agent_id).name
        phone.tell("My violin teacher is called Berta", agent=agent)
        phone.append("human", "Plays the violin on Sundays", agent=agent)
        phone.sync()

        dialog.sync_button.click()
        qtbot.waitUntil(
            lambda: "violin teacher is called Berta" in window.chat.transcript.toPlainText(), timeout=15_000
        )
        qtbot.waitUntil(
            lambda: "Plays the violin on Sundays" in window.memory.editors["human"].editor.toPlainText(),
            timeout=15_000,
        )
        qtbot.waitUntil(lambda: dialog.devices.rowCount() == 1, timeout=15_000)
        assert dialog.devices.item(0, 0).text() == "phone"

        # both change the same line: the window's merge keeps both and shows the conflict
        window.services.memory.core.replace(
            window.state.agent_id,
            "human",
            "Plays the violin on Sundays",
            "Plays the violin on Saturdays",
            source="user",
        )
        phone.services.memory.core.replace(
            phone.agent(agent), "human", "Plays the violin on Sundays", "Plays the cello on Sundays", source="user"
        )
        phone.sync()
        window.sync.sync_now()
        qtbot.waitUntil(lambda: dialog.conflicts.rowCount() == 1, timeout=20_000)
        assert dialog.conflicts.item(0, 1).text() == "human"
        human = window.services.memory.core.get(window.state.agent_id, "human").value
        assert "Saturdays" in human and "cello" in human
        # the conversation tells of it too (the model reads the same event)
        qtbot.waitUntil(lambda: "both versions are kept" in window.chat.transcript.toPlainText(), timeout=15_000)

        # removing the phone revokes its key: a new pairing code replaces the one shown
        window.sync.remove_device(setup.status(phone.db)["device"]["id"])
        qtbot.waitUntil(lambda: code not in dialog.code_label.text(), timeout=15_000)
        assert re.search(r"Pairing code: (\S+)", dialog.code_label.text())
        qtbot.waitUntil(lambda: "removed" in dialog.devices.item(0, 4).text(), timeout=15_000)
    finally:
        settle(window)
        dialog.close()
        fleet.close()
