"""One window or terminal chat per data folder: a second start fails at once, naming the process
that holds the folder, and the lock goes with its process, however that process ends."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from memdesk.app.instance import TERMINAL_CHAT, WINDOW, InstanceLock, ask_to_come_forward
from memdesk.core.base.errors import AlreadyRunningError, StoreError


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


def test_a_planted_symlink_or_hard_link_as_the_lock_is_refused_and_its_target_kept(tmp_path):
    """The lock file is truncated and written: a link planted in its place must not let it
    overwrite what the link points to."""
    target = tmp_path / "precious.txt"
    target.write_text("the user's notes")
    home = tmp_path / "home"
    home.mkdir()
    lock = home / "memdesk.lock"
    lock.symlink_to(target)
    with pytest.raises(StoreError) as refused:
        InstanceLock(lock, WINDOW).acquire()
    assert type(refused.value).__name__ == "InstanceLockError"
    assert target.read_text() == "the user's notes"
    lock.unlink()
    os.link(target, lock)
    with pytest.raises(StoreError) as refused:
        InstanceLock(lock, WINDOW).acquire()
    assert str(lock) in refused.value.user_message
    assert target.read_text() == "the user's notes"


def test_the_come_forward_request_never_writes_through_a_planted_link(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("the user's notes")
    request = tmp_path / "raise-window.request"
    request.symlink_to(target)
    ask_to_come_forward(request)
    assert target.read_text() == "the user's notes"
    request.unlink()
    os.link(target, request)
    ask_to_come_forward(request)
    assert target.read_text() == "the user's notes"
    request.unlink()
    ask_to_come_forward(request)  # the ordinary case still asks
    assert request.is_file() and not request.is_symlink()
