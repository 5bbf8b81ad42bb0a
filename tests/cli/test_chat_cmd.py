"""memdesk chat warms the model while the user types, and the typed line does not wait for it."""

from __future__ import annotations

import argparse

import pytest

from memdesk.app.services import daily_snapshots, open_services
from memdesk.cli import chat_cmd
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import say
from tests.runtime.child_runtimes import SlowWarmRuntime


def test_chat_warms_while_waiting_for_the_first_line(memdesk_home, monkeypatch):
    runtime = SlowWarmRuntime(context_window=32768)  # its warm-up would take a minute
    runtime.enqueue(say("Hello, Ada!"))
    monkeypatch.setattr(chat_cmd, "open_services", lambda: open_services(embedder=HashingEmbedder()))
    monkeypatch.setattr(chat_cmd, "make_runtime", lambda settings: runtime)
    lines = iter(["Hi, I am Ada.", "/quit"])

    def typing(prompt: str) -> str:
        assert runtime.warm_started.wait(10)  # the model is being warmed while the user types
        return next(lines)

    monkeypatch.setattr("builtins.input", typing)
    assert chat_cmd.run(argparse.Namespace(agent=None, verbose=False, no_login=True)) == 0
    assert runtime.warm_outcomes[:1] == ["cancelled"]  # the line went first
    assert [m.role for m in runtime.warmed[0]] == ["system"]
    assert runtime.pending == 0 and "Hi, I am Ada." in runtime.prompts[-1][-1].content  # and was answered


def test_the_first_chat_of_a_day_snapshots_the_store_in_the_background(memdesk_home, monkeypatch):
    runtime = SlowWarmRuntime(context_window=32768)
    runtime.enqueue(say("Hello, Ada!"))
    monkeypatch.setattr(chat_cmd, "open_services", lambda: open_services(embedder=HashingEmbedder()))
    monkeypatch.setattr(chat_cmd, "make_runtime", lambda settings: runtime)
    started = []

    def daily(services, **callbacks):
        started.append(daily_snapshots(services, **callbacks))
        return started[-1]

    monkeypatch.setattr(chat_cmd, "daily_snapshots", daily)
    lines = iter(["Hi, I am Ada.", "/quit"])

    def typing(prompt: str) -> str:
        started[0].wait()  # taken while the user could already type
        return next(lines)

    monkeypatch.setattr("builtins.input", typing)
    assert chat_cmd.run(argparse.Namespace(agent=None, verbose=False, no_login=True)) == 0
    services = open_services(embedder=HashingEmbedder())
    try:
        assert [s.reason for s in services.backups.list()] == ["daily"]
    finally:
        services.close()


@pytest.mark.processes  # HTTP is served by a child process
def test_while_the_chat_runs_it_serves_mcp_over_loopback_http_only_when_turned_on(memdesk_home, monkeypatch):
    import socket

    from memdesk.core.base.paths import Paths
    from memdesk.core.storage.settings_store import SettingsStore

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    seen: list[bool] = []

    def reachable() -> bool:
        with socket.socket() as client:
            return client.connect_ex(("127.0.0.1", port)) == 0

    def chat_once(http: bool) -> None:
        services = open_services(embedder=HashingEmbedder())
        SettingsStore(services.db).set("mcp_http_port", port)
        SettingsStore(services.db).set("mcp_http", http)
        services.close()
        runtime = SlowWarmRuntime(context_window=32768)
        runtime.enqueue(say("Hello!"))
        monkeypatch.setattr(chat_cmd, "open_services", lambda: open_services(embedder=HashingEmbedder()))
        monkeypatch.setattr(chat_cmd, "make_runtime", lambda settings: runtime)
        lines = iter(["Hi.", "/quit"])

        def typing(prompt: str) -> str:
            seen.append(reachable())
            return next(lines)

        monkeypatch.setattr("builtins.input", typing)
        assert chat_cmd.run(argparse.Namespace(agent=None, verbose=False, no_login=True)) == 0

    assert Paths.from_environment().ensure()
    chat_once(http=False)
    chat_once(http=True)
    assert seen[0] is False and seen[-1] is True
    assert not reachable()  # the chat ended: nothing listens
