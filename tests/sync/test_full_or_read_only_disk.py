"""A sync folder on a disk that is full or mounted read-only, for real: `memdesk sync now` runs in
a mount namespace of its own (unshare) where the folder is a full 256 KiB tmpfs or a read-only bind
mount. It says so in one line and loses nothing: the next sync, on a good disk, sends it all."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testing.children import die_with_parent

pytestmark = pytest.mark.processes

FULL = """cp -a "$FOLDER" "$STASH"
mount -t tmpfs -o size=256k tmpfs "$FOLDER"
cp -a "$STASH"/. "$FOLDER"/
dd if=/dev/zero of="$FOLDER/filler" bs=4k 2>/dev/null || true
exec "$MEMDESK" sync now"""
READ_ONLY = """mount --bind "$FOLDER" "$FOLDER"
mount -o remount,ro,bind "$FOLDER"
exec "$MEMDESK" sync now"""


def run_in_namespace(script: str, folder: Path, home: Path, stash: Path) -> subprocess.CompletedProcess:
    memdesk = str(Path(sys.executable).with_name("memdesk"))
    env = dict(os.environ, FOLDER=str(folder), STASH=str(stash), MEMDESK=memdesk, MEMDESK_HOME=str(home))
    return subprocess.run(
        ["unshare", "--map-root-user", "--mount", "--propagation", "private", "sh", "-ec", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=die_with_parent,
    )


@pytest.mark.parametrize(("script", "said"), [(FULL, "disk is full"), (READ_ONLY, "cannot be written")])
def test_a_full_or_read_only_sync_disk_is_reported_and_loses_nothing(fleet, tmp_path, script, said):
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed to mount a full or read-only disk for this test")
    laptop, desktop = fleet.device("laptop"), fleet.device("desktop")
    for device in (laptop, desktop):
        device.agent()
        fleet.pair(device)
    fleet.exchange()
    laptop.tell("written while the disk was full " + "x" * 2000)
    laptop.close()
    result = run_in_namespace(script, fleet.folder, laptop.home, tmp_path / "stash")
    assert result.returncode == 1, result.stderr
    assert said in result.stderr and "nothing was lost" in result.stderr
    laptop.open()
    laptop.sync()
    desktop.sync()
    assert desktop.db.scalar("SELECT COUNT(*) FROM messages WHERE content LIKE 'written while the disk was full%'") == 1
