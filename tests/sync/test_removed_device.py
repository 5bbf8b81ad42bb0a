"""Removing a device revokes its key: the devices still in the group adopt a new group key, the
removed one reads nothing written after, and its files written after removal are refused."""

from __future__ import annotations

import pytest

from memdesk.core.base.errors import PairingCodeError
from memdesk.core.sync import setup
from memdesk.core.sync.state import this_device


def has(device, text: str) -> bool:
    return bool(device.db.scalar("SELECT COUNT(*) FROM messages WHERE content = ?", (text,)))


def test_a_removed_device_reads_nothing_new_and_its_later_files_are_refused(fleet):
    laptop, desktop, phone = fleet.device("laptop"), fleet.device("desktop"), fleet.device("phone")
    for device in (laptop, desktop, phone):
        device.agent()
        fleet.pair(device)
    fleet.exchange()
    phone.tell("written on the phone before it was removed")
    phone.sync()
    old_key = this_device(laptop.db).group_key

    removed = setup.remove_device(laptop.db, laptop.clock, "phone")
    assert removed.name == "phone" and removed.missed == []
    phone.tell("written on the phone after it was removed")
    phone.sync()
    laptop.tell("said after the phone was removed")
    for device in (laptop, desktop, laptop):
        device.sync()

    for device in (laptop, desktop):
        assert this_device(device.db).group_key != old_key  # the desktop adopted the new key
        assert has(device, "written on the phone before it was removed")
        assert not has(device, "written on the phone after it was removed")
        problems = [p["problem"] for p in setup.status(device.db)["problems"]]
        assert any("after its device was removed" in p for p in problems)
    assert has(desktop, "said after the phone was removed")
    report = phone.sync()
    assert not has(phone, "said after the phone was removed")
    assert any("cannot be decrypted" in problem for problem in report.problems)
    assert this_device(phone.db).group_key == old_key

    # the old code pairs nothing now; the new one pairs a device that reads everything, old and new
    late = fleet.device("late")
    with pytest.raises(PairingCodeError):
        setup.join(late.db, late.clock, fleet.folder, fleet.code or "", "late")
    setup.join(late.db, late.clock, fleet.folder, removed.code, "late")
    late.sync()
    assert has(late, "written on the phone before it was removed") and has(late, "said after the phone was removed")
    assert not has(late, "written on the phone after it was removed")
    late.tell("from the device that joined after the removal")
    late.sync()
    for device in (laptop, desktop):
        device.sync()
    assert has(desktop, "from the device that joined after the removal")
    assert laptop.digest() == desktop.digest() == late.digest()


def test_a_forget_made_before_the_key_changed_still_wins_after(fleet):
    laptop, desktop, phone = fleet.device("laptop"), fleet.device("desktop"), fleet.device("phone")
    for device in (laptop, desktop, phone):
        device.agent()
        fleet.pair(device)
    fleet.exchange()
    laptop.forget("Carlota")
    fleet.exchange()
    setup.remove_device(laptop.db, laptop.clock, "phone")
    desktop.sync()
    desktop.tell("Carlota will bring the tent")  # the forget keeps forgetting, under the new key
    desktop.sync()
    laptop.sync()
    assert not any("Carlota" in text for device in (laptop, desktop) for text in device.texts())


def test_a_removal_cut_short_before_its_device_kept_the_new_key_is_finished_at_its_next_sync(fleet):
    laptop, desktop, phone = fleet.device("laptop"), fleet.device("desktop"), fleet.device("phone")
    for device in (laptop, desktop, phone):
        device.agent()
        fleet.pair(device)
    fleet.exchange()
    before = this_device(laptop.db)
    setup.remove_device(laptop.db, laptop.clock, "phone")
    # as if killed after writing the new key's files, before keeping it: the store holds the old one
    with laptop.db.transaction():
        laptop.db.execute("UPDATE sync_device SET group_key = ?, epoch = 0 WHERE id = 1", (before.group_key,))
        laptop.db.execute("DELETE FROM sync_group_keys")
    laptop.tell("said once the removal was finished")
    for device in (laptop, desktop, laptop, desktop):
        device.sync()
    assert this_device(laptop.db).group_key == this_device(desktop.db).group_key != before.group_key
    assert has(desktop, "said once the removal was finished")
    problems = phone.sync().problems
    assert not has(phone, "said once the removal was finished")  # written under the new key only
    assert any("it was removed from the group" in problem for problem in problems)
