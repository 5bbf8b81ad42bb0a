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
import textwrap
from pathlib import Path

import pytest

from desktop.app import open_services
from desktop.cli import chat_cmd
from desktop.cli.main import main
from desktop.core.embedding.hashing import HashingEmbedder
from desktop.core.runtime.scripted import ScriptedRuntime, say
from desktop.paths import Paths

from tests.conftest import NETWORK_EVENTS

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
SITECUSTOMIZE = textwrap.dedent(
    """
    import os, socket, sys
    _LOG = os.environ.get("MEMDESK_SOCKET_AUDIT")
    _EVENTS = {events!r}
    _INET = (socket.AF_INET, socket.AF_INET6)

    def _write(line):
        with open(_LOG, "a", encoding="utf-8") as handle:
            handle.write(f"{{os.getpid()}} {{line}}\\n")

    def _hook(event, args):
        if event in _EVENTS and (event.startswith("socket.get") or getattr(args[0], "family", None) in _INET):
            _write(f"NETWORK {{event}} {{args!r}}")

    if _LOG:
        _write("start " + " ".join(sys.argv))
        sys.addaudithook(_hook)
    """
).format(events=NETWORK_EVENTS)


def audited_run(tmp_path: Path, argv: list[str], stdin: str | None = None, timeout: int = 900) -> list[str]:
    """Run ``argv`` with an audit hook in every Python process it starts; return the log lines."""
    hooks = tmp_path / "audit-hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    log = tmp_path / "sockets.log"
    env = {
        **os.environ,
        "MEMDESK_HOME": str(tmp_path / "home"),
        "MEMDESK_SOCKET_AUDIT": str(log),
        "PYTHONPATH": os.pathsep.join([str(hooks), str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "QT_QPA_PLATFORM": "offscreen",
    }
    env.pop("HF_HUB_OFFLINE", None)  # a user's plain environment: MemDesk itself must stay offline
    result = subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return log.read_text(encoding="utf-8").splitlines()


def processes(lines: list[str]) -> dict[str, str]:
    return {line.split(" ", 1)[0]: line.split(" ", 2)[2] for line in lines if line.split(" ", 2)[1] == "start"}


@pytest.mark.model
def test_a_real_cli_chat_turn_opens_no_socket_in_the_app_or_the_model_process(tmp_path):
    lines = audited_run(tmp_path, [sys.executable, "-m", "desktop.cli.main", "chat", "--agent", "sam"], stdin="Hi, I'm Ada.\n/quit\n")
    assert [line for line in lines if " NETWORK " in line] == []
    # The CLI and the model's child process (a multiprocessing spawn) were both audited.
    assert any("--multiprocessing-fork" in argv for argv in processes(lines).values()), lines


@pytest.mark.model
def test_the_real_window_opening_and_answering_opens_no_socket(tmp_path):
    shot = tmp_path / "window.png"
    lines = audited_run(
        tmp_path, [sys.executable, "-m", "desktop.ui.main", "--screenshot", str(shot), "--message", "Hi, I am Ada."], timeout=900
    )
    assert shot.exists()
    assert [line for line in lines if " NETWORK " in line] == []
    assert any("--multiprocessing-fork" in argv for argv in processes(lines).values()), lines  # the model's child
