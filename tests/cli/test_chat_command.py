"""``memdesk chat``: the user's first line never waits behind the login turn."""

from __future__ import annotations

import argparse
import threading

from desktop.cli import chat_cmd
from desktop.core.embedding.hashing import HashingEmbedder
from desktop.core.runtime.scripted import ScriptedRuntime, say


def test_a_typed_line_preempts_the_login_turn(monkeypatch, capsys, services):
    typed = threading.Event()
    login_started = threading.Event()

    def slow_login(_messages):
        login_started.set()
        typed.wait(30)  # generation still running when the user presses Enter
        return say("Welcome back! " * 50)

    runtime = ScriptedRuntime([slow_login, say("Hi Ada!")], context_window=16384)
    monkeypatch.setattr(chat_cmd, "open_services", lambda: services)
    monkeypatch.setattr(chat_cmd, "make_runtime", lambda settings: runtime)
    monkeypatch.setattr(services, "close", lambda: None)
    lines = iter(["I am Ada", "/quit"])

    def fake_input(prompt):
        line = next(lines)
        if line == "I am Ada":
            assert login_started.wait(30)
            typed.set()
        return line

    monkeypatch.setattr("builtins.input", fake_input)
    assert chat_cmd.run(argparse.Namespace(agent="ada", verbose=False, no_login=False)) == 0
    assert "agent> Hi Ada!" in capsys.readouterr().out
    record = services.agents.get_by_name("ada")
    kinds = [m.kind for m in services.memory.recall.all(record.id)]
    # The login event was saved, its unfinished step was not; the user's turn ran in full.
    assert kinds == ["login", "user_message", "assistant_call", "function_result"]
    assert isinstance(services.embedder, HashingEmbedder)
