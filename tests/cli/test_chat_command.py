"""``memdesk chat``: the user's first line never waits behind the login turn."""

from __future__ import annotations

import argparse
import threading

from memdesk.cli import chat_cmd
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime, say
from memdesk.core.storage import open_database
from memdesk.session.jobs import JobThread


def test_a_typed_line_preempts_the_login_turn(monkeypatch, capsys, services):
    typed = threading.Event()
    login_started = threading.Event()

    def slow_login(_messages):
        login_started.set()
        typed.wait(30)  # generation still running when the user presses Enter
        return say("Welcome back! " * 50)

    class Streaming(ScriptedRuntime):
        """Streams like a model: about a piece every 20 ms (the login's long answer takes seconds)."""

        def generate_call(self, request, *, on_event=None, cancel=None):
            def slow(event):
                threading.Event().wait(0.02)
                if on_event is not None:
                    on_event(event)

            return super().generate_call(request, on_event=slow, cancel=cancel)

    runtime = Streaming([slow_login, say("Hi Ada!")], context_window=16384)
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


def committed_messages(services) -> list[tuple[str, str]]:
    """What another connection sees: only what is committed (what a kill -9 would leave)."""
    other = open_database(services.paths.database)
    try:
        return [(row[0], row[1]) for row in other.query("SELECT kind, search_text FROM messages ORDER BY id")]
    finally:
        other.close()


def test_a_typed_line_is_saved_before_the_background_turn_is_cancelled_or_waited_for(monkeypatch, capsys, services):
    login_started = threading.Event()
    release = threading.Event()

    def blocked_login(_messages):
        login_started.set()
        release.wait(30)  # a long prompt batch or a tool: the login lets go of the model only later
        return say("Welcome back!")

    runtime = ScriptedRuntime([blocked_login, say("Hi Ada!")], context_window=16384)
    monkeypatch.setattr(chat_cmd, "open_services", lambda: services)
    monkeypatch.setattr(chat_cmd, "make_runtime", lambda settings: runtime)
    monkeypatch.setattr(services, "close", lambda: None)
    at_preempt: list[list[tuple[str, str]]] = []
    submit = JobThread.submit

    def observed_submit(self, run, *, user=False):
        if user:  # the user's turn is queued: the background turn is cancelled now
            at_preempt.append(committed_messages(services))  # the login turn is still blocked here
            release.set()
        return submit(self, run, user=user)

    monkeypatch.setattr(JobThread, "submit", observed_submit)
    lines = iter(["I am Ada", "/quit"])

    def fake_input(prompt):
        line = next(lines)
        if line == "I am Ada":
            assert login_started.wait(30)
        return line

    monkeypatch.setattr("builtins.input", fake_input)
    assert chat_cmd.run(argparse.Namespace(agent="ada", verbose=False, no_login=False)) == 0
    assert at_preempt == [[("login", ""), ("user_message", "I am Ada")]]
    assert "agent> Hi Ada!" in capsys.readouterr().out
    # Answered once, on the saved row: the line is not in the store twice.
    assert [kind for kind, _ in committed_messages(services)] == [
        "login",
        "user_message",
        "assistant_call",
        "function_result",
    ]
