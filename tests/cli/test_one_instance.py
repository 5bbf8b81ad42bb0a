"""``memdesk chat`` takes the data folder's one-instance lock: it refuses to start beside a
running window or chat, and lets the next one start once it ends. Other commands do not take it."""

from __future__ import annotations

import io
import os
import sys

import pytest

from memdesk.app.instance import WINDOW, InstanceLock
from memdesk.app.services import open_services
from memdesk.cli import chat_cmd
from memdesk.cli.main import main
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime, say


@pytest.fixture
def running_window(memdesk_home):
    with InstanceLock(Paths.from_environment().instance_lock, WINDOW) as lock:
        yield lock


def test_chat_refuses_to_start_beside_a_running_window_and_opens_nothing(running_window, monkeypatch, capsys):
    def must_not_open():
        raise AssertionError("the store was opened: the refusal came late")

    monkeypatch.setattr(chat_cmd, "open_services", must_not_open)
    assert main(["chat", "--agent", "sam"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("memdesk: MemDesk is already running") and f"{WINDOW} (process {os.getpid()})" in error


def test_other_commands_keep_working_while_the_window_runs(running_window, capsys):
    assert main(["agents", "create", "sam"]) == 0
    assert main(["agents"]) == 0
    assert main(["memory", "sam"]) == 0
    assert main(["settings", "user_name", "Ada"]) == 0


def test_chat_twice_in_a_row_then_the_window_can_start(memdesk_home, monkeypatch):
    monkeypatch.setattr(
        chat_cmd, "open_services", lambda: open_services(Paths.from_environment(), embedder=HashingEmbedder())
    )
    for reply in ("Hello Ada.", "Hello again."):
        monkeypatch.setattr(
            chat_cmd, "make_runtime", lambda _settings, reply=reply: ScriptedRuntime([say(reply)], context_window=16384)
        )
        monkeypatch.setattr(sys, "stdin", io.StringIO("Hi\n/quit\n"))
        assert main(["chat", "--agent", "sam", "--no-login"]) == 0
    with InstanceLock(Paths.from_environment().instance_lock, WINDOW) as lock:
        assert lock.held
