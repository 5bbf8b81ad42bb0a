"""`memdesk sync now` killed with SIGKILL while it writes its change files or applies another
device's, again and again: nothing is lost and nothing is applied twice. The kills land at growing
delays, and the test checks that some landed half-way (files applied before and after them)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memdesk.core.sync.state import peers
from testing.children import die_with_parent

pytestmark = pytest.mark.processes

DELAYS = (0.8, 1.2, 1.6, 2.0, 2.5, 3.0, 3.5, 4.5)


def killed_sync(home: Path, delay: float) -> bool:
    """Start `memdesk sync now` on ``home`` and SIGKILL it after ``delay`` s; whether it was killed."""
    memdesk = str(Path(sys.executable).with_name("memdesk"))
    env = dict(os.environ, MEMDESK_HOME=str(home), HF_HUB_OFFLINE="1")
    child = subprocess.Popen(
        [memdesk, "sync", "now"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,  # a pipe nobody reads could fill and stall the child
        preexec_fn=die_with_parent,
    )
    try:
        child.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        os.kill(child.pid, signal.SIGKILL)
        return True
    finally:  # whatever happened here, the child is gone and reaped before the test goes on
        if child.poll() is None:
            child.kill()
        child.wait(timeout=30)


def test_kills_while_applying_lose_nothing_and_apply_nothing_twice(fleet):
    writer, reader = fleet.device("writer"), fleet.device("reader")
    for device in (writer, reader):
        device.agent()
        fleet.pair(device)
    fleet.exchange()
    files = 80
    for batch in range(files):
        with writer.db.transaction():
            for n in range(150):
                writer.tell(f"batch {batch} message {n} " + "word " * 40)
        writer.sync()
    reader.close()
    progress = []
    for delay in DELAYS:
        killed = killed_sync(reader.home, delay)
        reader.open()
        progress.append(next(p.applied_seq for p in peers(reader.db) if p.name == "writer"))
        reader.close()
        if not killed:
            break
    reader.open()
    reader.sync()
    assert any(0 < applied < files + 1 for applied in progress), progress  # some kills landed half-way
    assert reader.db.scalar("SELECT COUNT(*) FROM messages WHERE content LIKE 'batch %'") == files * 150
    assert reader.db.scalar("SELECT COUNT(*) FROM sync_applying") == 0
    assert reader.digest() == writer.digest()
    assert reader.fts_agrees()


def test_kills_while_writing_change_files_lose_nothing_and_send_nothing_twice(fleet):
    writer, reader = fleet.device("writer"), fleet.device("reader")
    for device in (writer, reader):
        device.agent()
        fleet.pair(device)
    fleet.exchange()
    kills = []
    for round_ in range(len(DELAYS)):
        with writer.db.transaction():
            for n in range(2000):
                writer.tell(f"round {round_} message {n} " + "word " * 30)
        writer.close()
        kills.append(killed_sync(writer.home, DELAYS[round_] / 2))
        writer.open()
    assert any(kills)
    writer.sync()
    reader.sync()
    assert reader.db.scalar("SELECT COUNT(*) FROM messages WHERE content LIKE 'round %'") == len(DELAYS) * 2000
    assert writer.db.scalar("SELECT COUNT(*) FROM sync_pending_file") == 0
    assert reader.digest() == writer.digest()
    assert not list(fleet.folder.rglob(".tmp-*"))  # what a kill left half-written is gone
