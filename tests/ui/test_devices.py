"""File > Devices… in the real window (offscreen): start a sync folder and show its code; another
device pairs with it, tells a fact and edits a block; the window syncs on its own and shows both
without a restart, lists the device, keeps a conflict in view and in the conversation, and
removes the device with a new pairing code. And the same through two real Syncthing daemons: the
window joins a folder another device started, and shows what that device was told."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
import segno
from PySide6.QtGui import QImage

from memdesk.core.sync import setup
from memdesk.core.sync.digest import synced_digest
from testing.sync_devices import Fleet
from testing.syncthing import SyncthingPair

#: Bounded waits through Syncthing: it notices a change within a second or two on loopback.
CARRY_S = 90


def read_symbol(image: QImage) -> tuple[list[list[bool]], int]:
    """The modules of the QR code drawn in ``image``, read back as a reader finds them: the first
    dark pixel is the top-left finder pattern's corner, whose top edge is seven modules wide; each
    module is read at its centre. Also returns the light margin around the symbol, in modules."""

    def dark(x: int, y: int) -> bool:
        return image.pixelColor(x, y).lightness() < 128

    side = image.width()
    assert image.height() == side
    left, top = next((x, y) for y in range(side) for x in range(side) if dark(x, y))
    edge = 0
    while dark(left + edge, top):
        edge += 1
    module = edge // 7
    assert module >= 1 and edge == 7 * module and left == top
    count = (side - 2 * left) // module
    modules = [
        [dark(left + column * module + module // 2, top + row * module + module // 2) for column in range(count)]
        for row in range(count)
    ]
    return modules, left // module


def assert_qr_of(label, code: str) -> None:
    """The dialog shows ``code`` as a QR code (medium error correction) a reader can scan."""
    assert label.isVisible() and label.accessibleName()
    modules, margin = read_symbol(label.pixmap().toImage())
    assert margin >= 4  # the quiet zone readers need
    assert modules == [[bool(m) for m in row] for row in segno.make_qr(code, error="m").matrix]


def assert_nowhere_on_disk(root: Path, code: str) -> None:
    forms = {code.encode(), code.replace("-", "").encode()}
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(form in data for form in forms), f"the pairing code was written to {path}"


def test_a_fact_told_on_another_device_shows_in_the_window_without_a_restart(
    make_window, roomy_runtime, qtbot, settle, tmp_path, migrated_store, caplog
):
    caplog.set_level(logging.DEBUG)
    window = make_window(roomy_runtime)
    folder = tmp_path / "Sync" / "MemDesk sync"
    dialog = window.sync.open_dialog()
    assert dialog.start_button.isVisible() and not dialog.sync_button.isEnabled()
    window.sync.start_folder(folder)
    qtbot.waitUntil(lambda: dialog.code_label.isVisible(), timeout=15_000)
    code = re.search(r"Pairing code: (\S+)", dialog.code_label.text()).group(1)
    assert_qr_of(dialog.code_qr, code)  # beside the code to type, the same code to scan
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
        new_code = re.search(r"Pairing code: (\S+)", dialog.code_label.text()).group(1)
        assert_qr_of(dialog.code_qr, new_code)  # the old code's symbol is gone with it
        qtbot.waitUntil(lambda: "removed" in dialog.devices.item(0, 4).text(), timeout=15_000)
        settle(window)
        # the codes are keys to this memory: shown, never kept in a file or a log
        for shown in (code, new_code):
            assert_nowhere_on_disk(tmp_path, shown)
            assert shown not in caplog.text and shown.replace("-", "") not in caplog.text
    finally:
        settle(window)
        dialog.close()
        fleet.close()


@pytest.mark.processes
def test_the_window_shows_a_fact_told_on_another_device_through_a_real_syncthing_pair(
    make_window, roomy_runtime, qtbot, settle, tmp_path, migrated_store
):
    window = make_window(roomy_runtime)
    agent = window.services.agents.get(window.state.agent_id).name
    fleet = Fleet(tmp_path / "others", migrated_store)
    dialog = None

    def pause(seconds: float) -> None:  # the window's sync jobs end and show what they applied
        qtbot.wait(int(seconds * 1000))

    try:
        with SyncthingPair(tmp_path / "syncthing") as pair:
            laptop_folder, window_folder = pair.folders
            laptop = fleet.device("laptop")
            laptop.agent(agent)
            code = setup.start(laptop.db, laptop.clock, laptop_folder / "memdesk", "laptop")
            laptop.sync()
            pair.scan()
            pair.wait_for(
                lambda: (window_folder / "memdesk" / "group.mds").exists(), CARRY_S, "the folder to arrive", pause
            )

            # the window joins as a user does in File > Devices… (a folder chosen, the code typed)
            dialog = window.sync.open_dialog()
            window.sync.join_folder(window_folder / "memdesk", code)
            qtbot.waitUntil(lambda: dialog.sync_button.isEnabled(), timeout=15_000)

            laptop.tell("My grandmother's village is called Pitões das Júnias", agent=agent)
            laptop.append("human", "Allergic to walnuts", agent=agent)

            def after_both_sync(check):
                def condition() -> bool:  # each side, every time: what one applied may wait on the other
                    laptop.sync()
                    window.sync.sync_now(quiet=True)
                    pair.scan()
                    return check()

                return condition

            transcript = window.chat.transcript
            pair.wait_for(
                after_both_sync(lambda: "Pitões das Júnias" in transcript.toPlainText()),
                CARRY_S,
                "the laptop's message to show in the window",
                pause,
            )
            human = window.memory.editors["human"].editor
            pair.wait_for(
                after_both_sync(lambda: "Allergic to walnuts" in human.toPlainText()),
                CARRY_S,
                "the laptop's block edit to show in the window",
                pause,
            )
            search = window.services.memory.recall.search_text(window.state.agent_id, "grandmother village")
            assert any("Pitões das Júnias" in message.content for message in search.hits)
            devices = dialog.devices
            pair.wait_for(
                after_both_sync(lambda: "laptop" in {devices.item(row, 0).text() for row in range(devices.rowCount())}),
                CARRY_S,
                "the window to list the laptop",
                pause,
            )

            def same_memory() -> bool:
                settle(window)
                return laptop.digest() == synced_digest(window.services.db)

            pair.wait_for(after_both_sync(same_memory), CARRY_S, "both devices to hold the same memory", pause)
            assert not setup.status(laptop.db)["problems"]
            settle(window)
    finally:
        if dialog is not None:
            dialog.close()
        fleet.close()
