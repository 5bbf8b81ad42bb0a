"""Bad input reaching the sync folder: refused, reported, never half-applied; and a folder that
cannot be written loses nothing."""

from __future__ import annotations

import errno
import os
import shutil

import pytest

from memdesk.core.base.errors import DuplicateDeviceError, PairingCodeError, SyncError
from memdesk.core.storage.migrations import MIGRATIONS
from memdesk.core.sync import envelope, setup
from memdesk.core.sync.engine import SyncEngine
from memdesk.core.sync.envelope import Header, seal
from memdesk.core.sync.folder import SyncFolder
from memdesk.core.sync.state import this_device


@pytest.fixture
def pair(fleet):
    laptop, desktop = fleet.device("laptop"), fleet.device("desktop")
    for device in (laptop, desktop):
        device.agent()
        fleet.pair(device)
    fleet.exchange()
    laptop.tell("before anything went wrong")
    laptop.sync()
    desktop.sync()
    return laptop, desktop


def next_file(fleet, laptop, text: str):
    laptop.tell(text)
    report = laptop.sync()
    device = this_device(laptop.db)
    return SyncFolder(fleet.folder).log_path(device.device_id, report.sent[-1])


def messages(device, text: str) -> int:
    return device.db.scalar("SELECT COUNT(*) FROM messages WHERE content = ?", (text,))


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda data: data[:-40], "signature"),  # truncated
        (lambda data: data[: len(data) // 2], "signature"),  # cut in half
        (lambda data: data[:200] + bytes([data[200] ^ 1]) + data[201:], "signature"),  # one bit flipped
        (lambda data: b"garbage" * 30, "not a MemDesk change file"),  # not ours at all
    ],
)
def test_a_damaged_change_file_is_refused_reported_and_kept(fleet, pair, damage, said):
    laptop, desktop = pair
    path = next_file(fleet, laptop, "a message in a damaged file")
    path.write_bytes(damage(path.read_bytes()))
    report = desktop.sync()
    assert messages(desktop, "a message in a damaged file") == 0
    assert report.problems and said in report.problems[0]
    status = setup.status(desktop.db)
    assert status["problems"][0]["file"] == path.name and said in status["devices"][0]["problem"]
    assert path.exists()
    # the same refusal is reported once, not at every sync
    assert desktop.sync().problems == []


def test_a_file_replayed_under_a_later_number_is_refused(fleet, pair):
    laptop, desktop = pair
    old = next_file(fleet, laptop, "said once")
    desktop.sync()
    replayed = old.with_name(f"{int(old.stem) + 1:010d}.mds")
    shutil.copyfile(old, replayed)
    report = desktop.sync()
    assert "replayed" in report.problems[0]
    assert messages(desktop, "said once") == 1


def test_a_file_from_another_sync_folder_is_refused(fleet, pair, tmp_path):
    laptop, desktop = pair
    stranger = this_device(laptop.db)
    other_key = os.urandom(32)
    device = this_device(laptop.db)
    header = Header("another-group", device.device_id, device.next_seq, "log")
    path = SyncFolder(fleet.folder).log_path(device.device_id, device.next_seq)
    path.write_bytes(seal(header, {"schema": 1, "records": []}, other_key, stranger.signing_key))
    report = desktop.sync()
    assert "another sync folder" in report.problems[0]


def test_a_file_signed_by_an_unpaired_device_is_refused(fleet, pair):
    laptop, desktop = pair
    device = this_device(laptop.db)
    intruder_key, _ = envelope.new_signing_key()
    header = Header(device.group_id, device.device_id, device.next_seq, "log")
    payload = {"schema": 1, "records": [{"t": "m", "agent": "x", "rows": []}]}
    path = SyncFolder(fleet.folder).log_path(device.device_id, device.next_seq)
    path.write_bytes(seal(header, payload, device.group_key, intruder_key))
    report = desktop.sync()
    assert "signature" in report.problems[0]


def test_a_wrong_pairing_code_opens_nothing(fleet, pair):
    stranger = fleet.device("stranger")
    with pytest.raises(PairingCodeError):
        setup.join(stranger.db, stranger.clock, fleet.folder, "AAAA-BBBB-CCCC-DDDD-EEEE", "stranger")
    assert this_device(stranger.db) is None


def test_a_newer_schema_is_refused_by_name_kept_and_applied_after_an_upgrade(fleet, pair):
    laptop, desktop = pair
    device = this_device(laptop.db)
    newer = len(MIGRATIONS) + 1
    agent_uid = laptop.db.scalar("SELECT uid FROM agents")
    row = {
        "uid": "f" * 32,
        "created_at": "2026-11-30T09:00:00+00:00",
        "role": "user",
        "kind": "user_message",
        "author": None,
        "content": "from the future",
        "search_text": "from the future",
        "function_name": None,
        "step": None,
    }
    payload = {"schema": newer, "hlc": 1, "records": [{"t": "m", "agent": agent_uid, "rows": [row]}]}
    path = SyncFolder(fleet.folder).log_path(device.device_id, device.next_seq)
    path.write_bytes(
        seal(
            Header(device.group_id, device.device_id, device.next_seq, "log"),
            payload,
            device.group_key,
            device.signing_key,
        )
    )
    laptop.db.execute("UPDATE sync_device SET next_seq = next_seq + 1")
    laptop.tell("after the future")
    laptop.sync()
    report = desktop.sync()
    assert f"store schema {newer}" in report.problems[0] and f"knows {len(MIGRATIONS)}" in report.problems[0]
    assert messages(desktop, "from the future") == 0 and messages(desktop, "after the future") == 0
    assert path.exists()
    upgraded = SyncEngine(desktop.db, desktop.clock, desktop.engine._rows, forget=lambda a, t: None, schema=newer)
    upgraded.now()
    assert messages(desktop, "from the future") == 1 and messages(desktop, "after the future") == 1


def test_a_store_copied_to_another_machine_is_told_it_is_a_duplicate_device(fleet, pair):
    laptop, desktop = pair
    laptop.close()
    clone_home = fleet.root / "clone"
    shutil.copytree(laptop.home, clone_home)
    laptop.open()
    clone = fleet.device("clone")
    laptop.tell("written by the original")
    laptop.sync()
    clone.tell("written by the copy")
    with pytest.raises(DuplicateDeviceError):
        clone.sync()
    assert messages(desktop, "written by the copy") == 0


@pytest.mark.parametrize("failure", [errno.ENOSPC, errno.EROFS])
def test_a_full_or_read_only_folder_loses_nothing(fleet, pair, monkeypatch, failure):
    laptop, desktop = pair
    laptop.tell("waits for space")

    def refuse(*args, **kwargs):
        raise OSError(failure, os.strerror(failure))

    monkeypatch.setattr("memdesk.core.sync.folder.os.fsync", refuse)
    with pytest.raises(SyncError) as raised:
        laptop.sync()
    assert (
        ("full" in raised.value.message) if failure == errno.ENOSPC else ("cannot be written" in raised.value.message)
    )
    assert laptop.db.scalar("SELECT COUNT(*) FROM sync_pending_file") == 1
    assert not list(fleet.folder.rglob(".tmp-*"))
    monkeypatch.undo()
    laptop.sync()
    desktop.sync()
    assert messages(desktop, "waits for space") == 1


def test_files_before_a_damaged_one_apply_together_and_the_rest_wait_for_it(fleet, pair):
    laptop, desktop = pair
    for n in range(5):
        next_file(fleet, laptop, f"good file {n}")
    damaged = next_file(fleet, laptop, "in the damaged file")
    after = next_file(fleet, laptop, "after the damaged file")
    damaged.write_bytes(damaged.read_bytes()[:-40])
    report = desktop.sync()
    assert [messages(desktop, f"good file {n}") for n in range(5)] == [1] * 5
    assert messages(desktop, "in the damaged file") == messages(desktop, "after the damaged file") == 0
    assert report.received == {"laptop": 5} and "signature" in report.problems[0]
    assert setup.status(desktop.db)["problems"][0]["file"] == damaged.name
    applied = next(p["applied"] for p in setup.status(desktop.db)["devices"] if p["name"] == "laptop")
    assert applied == int(damaged.stem) - 1
    assert after.exists() and damaged.exists()
