"""A default run opens no network socket: no connect, bind, send or name lookup on an internet
socket, in the app's process or in the model's child process.

Python's audit hooks (``sys.addaudithook``) see every socket call made through the ``socket``
module, whatever library makes it. They do not see sockets opened by native code that bypasses
Python (llama.cpp, Qt); neither of those has networking in MemDesk's build or use.
"""

from __future__ import annotations

import io
import socket
import sys

import pytest

from memdesk.app.services import open_services
from memdesk.cli import chat_cmd
from memdesk.cli.main import main
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime, say


def test_the_audit_sees_a_connection_attempt(socket_audit):
    with socket_audit:
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", 9), timeout=1)
    assert any(event.startswith("socket.connect ") and "127.0.0.1" in event for event in socket_audit.events)


def test_a_cli_chat_turn_opens_no_socket(socket_audit, monkeypatch):
    runtime = ScriptedRuntime([say("Welcome back!"), say("Nice to meet you, Ada.")], context_window=16384)
    monkeypatch.setattr(chat_cmd, "make_runtime", lambda _settings: runtime)
    monkeypatch.setattr(
        chat_cmd, "open_services", lambda: open_services(Paths.from_environment(), embedder=HashingEmbedder())
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO("Hi, I'm Ada.\n/quit\n"))
    with socket_audit:
        assert main(["chat", "--agent", "sam"]) == 0
        assert main(["models", "list"]) == 0  # listing models and the catalog stays offline too
    # The login turn runs in the background and the typed line preempts it, or, when the login turn
    # got there first, is read by its next step: either way the last prompt holds the typed line.
    assert len(runtime.prompts) in (1, 2) and any("Hi, I'm Ada." in message.content for message in runtime.prompts[-1])
    assert socket_audit.events == []


# --- the real app, in fresh processes (testing/real_app.py) --------------------------------------------
def test_every_python_process_of_an_audited_run_logs_its_start_and_its_network_use(real_app):
    """The hook the real-app audits rely on reaches a child process and sees a lookup there."""
    probe = (
        "import socket, subprocess, sys; socket.getaddrinfo('127.0.0.1', 9); "
        "subprocess.run([sys.executable, '-c', 'pass'])"
    )
    run = real_app(audit=True).run([sys.executable, "-c", probe])
    assert run.returncode == 0, run.explain()
    assert len(run.network_events) == 1 and "socket.getaddrinfo" in run.network_events[0]
    assert len(run.processes) == 2  # the program and its child


@pytest.mark.model
def test_a_real_cli_chat_turn_opens_no_socket_in_the_app_or_the_model_process(real_chat_run):
    assert real_chat_run.returncode == 0, real_chat_run.explain()
    assert real_chat_run.network_events == []
    # The CLI and the model's child process (a multiprocessing spawn) were both audited.
    assert real_chat_run.model_child_audited, real_chat_run.processes


@pytest.mark.model
def test_the_real_window_opening_and_answering_opens_no_socket(real_window_run):
    assert real_window_run.returncode == 0, real_window_run.explain()
    assert real_window_run.screenshot.exists()
    assert real_window_run.network_events == []
    assert real_window_run.model_child_audited, real_window_run.processes
