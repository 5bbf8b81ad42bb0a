"""A default run opens no network socket: no connect, bind, send or name lookup on an internet
socket, in the app's process or in the model's child process.

Python's audit hooks (``sys.addaudithook``) see every socket call made through the ``socket``
module, whatever library makes it. They do not see sockets opened by native code that bypasses
Python (llama.cpp, Qt); neither of those has networking in MemDesk's build or use.
"""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from desktop.app import open_services
from desktop.cli import chat_cmd
from desktop.cli.main import main
from desktop.core.embedding.hashing import HashingEmbedder
from desktop.core.runtime.scripted import ScriptedRuntime, say
from desktop.paths import Paths

from bench.socket_audit import audit_environment, network_lines, started

ROOT = Path(__file__).resolve().parents[1]


def test_the_audit_sees_a_connection_attempt(socket_audit):
    with socket_audit:
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", 9), timeout=1)
    assert any(event.startswith("socket.connect ") and "127.0.0.1" in event for event in socket_audit.events)


def test_a_cli_chat_turn_opens_no_socket(socket_audit, monkeypatch):
    runtime = ScriptedRuntime([say("Welcome back!"), say("Nice to meet you, Ada.")], context_window=16384)
    monkeypatch.setattr(chat_cmd, "make_runtime", lambda _settings: runtime)
    monkeypatch.setattr(chat_cmd, "open_services", lambda: open_services(Paths.from_environment(), embedder=HashingEmbedder()))
    monkeypatch.setattr(sys, "stdin", io.StringIO("Hi, I'm Ada.\n/quit\n"))
    with socket_audit:
        assert main(["chat", "--agent", "sam"]) == 0
        assert main(["models", "list"]) == 0  # listing models and the catalog stays offline too
    # The login turn runs in the background and the typed line preempts it, or, when the login turn
    # got there first, is read by its next step: either way the last prompt holds the typed line.
    assert len(runtime.prompts) in (1, 2) and any("Hi, I'm Ada." in message.content for message in runtime.prompts[-1])
    assert socket_audit.events == []


# --- the real app, in fresh processes ----------------------------------------------------------------
def audited_run(tmp_path: Path, argv: list[str], stdin: str | None = None, timeout: int = 900) -> list[str]:
    """Run ``argv`` with the audit hook in every Python process it starts (bench/socket_audit.py);
    return the network events; ``tmp_path / "sockets.log"`` keeps the whole log."""
    env = {**os.environ, "MEMDESK_HOME": str(tmp_path / "home"), "QT_QPA_PLATFORM": "offscreen",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    env.pop("HF_HUB_OFFLINE", None)  # a user's plain environment: MemDesk itself must stay offline
    env = audit_environment(tmp_path / "sockets.log", env)
    result = subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return network_lines(tmp_path / "sockets.log")


def test_every_python_process_of_an_audited_run_logs_its_start_and_its_network_use(tmp_path):
    """The hook the real-app audits rely on reaches a child process and sees a lookup there."""
    probe = "import socket, subprocess, sys; socket.getaddrinfo('127.0.0.1', 9); subprocess.run([sys.executable, '-c', 'pass'])"
    events = audited_run(tmp_path, [sys.executable, "-c", probe])
    assert len(events) == 1 and "socket.getaddrinfo" in events[0]
    assert len(started(tmp_path / "sockets.log")) == 2  # the program and its child


@pytest.mark.model
def test_a_real_cli_chat_turn_opens_no_socket_in_the_app_or_the_model_process(tmp_path):
    assert audited_run(tmp_path, [sys.executable, "-m", "desktop.cli.main", "chat", "--agent", "sam"], stdin="Hi, I'm Ada.\n/quit\n") == []
    # The CLI and the model's child process (a multiprocessing spawn) were both audited.
    processes = started(tmp_path / "sockets.log")
    assert any("--multiprocessing-fork" in argv for argv in processes.values()), processes


@pytest.mark.model
def test_the_real_window_opening_and_answering_opens_no_socket(tmp_path):
    shot = tmp_path / "window.png"
    events = audited_run(
        tmp_path, [sys.executable, "-m", "desktop.ui.main", "--screenshot", str(shot), "--message", "Hi, I am Ada."], timeout=900
    )
    assert shot.exists()
    assert events == []
    processes = started(tmp_path / "sockets.log")
    assert any("--multiprocessing-fork" in argv for argv in processes.values()), processes  # the model's child
