"""One window or terminal chat per data folder: a second start fails at once, naming the process
that holds the folder, and the lock goes with its process, however that process ends."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from memdesk.app.instance import TERMINAL_CHAT, WINDOW, InstanceLock
from memdesk.core.base.errors import AlreadyRunningError


def test_a_second_start_is_refused_naming_the_first_until_it_ends(tmp_path):
    path = tmp_path / "home" / "memdesk.lock"
    first = InstanceLock(path, WINDOW).acquire()
    with pytest.raises(AlreadyRunningError) as refused:
        InstanceLock(path, TERMINAL_CHAT).acquire()
    assert refused.value.pid == os.getpid() and refused.value.program == WINDOW
    assert f"{WINDOW} (process {os.getpid()})" in refused.value.user_message
    first.release()
    with InstanceLock(path, TERMINAL_CHAT) as second:
        assert second.held
    assert not second.held


def test_the_lock_is_gone_with_a_process_killed_by_sigkill(tmp_path):
    path = tmp_path / "memdesk.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys, time
            from memdesk.app.instance import InstanceLock
            InstanceLock(__import__("pathlib").Path({str(path)!r}), "memdesk chat").acquire()
            print("held", flush=True)
            time.sleep(600)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(AlreadyRunningError) as refused:
            InstanceLock(path, WINDOW).acquire()
        assert refused.value.pid == holder.pid and f"process {holder.pid}" in refused.value.user_message
    finally:
        holder.kill()  # SIGKILL: no clean-up runs in the holder
        holder.wait()
    with InstanceLock(path, WINDOW) as taken:
        assert taken.held
