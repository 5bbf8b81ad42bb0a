"""``memdesk chat --private``: the agent reads its memories, the chat (its edits included) shows
while it lasts and is discarded on exit; the store file is byte for byte what it was."""

from __future__ import annotations

import argparse
from pathlib import Path

from memdesk.app.sessions import build_session
from memdesk.cli import chat_cmd
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say

SECRET = "zanzibarquux"


def store_bytes(path: Path) -> list[bytes | None]:
    return [Path(f"{path}{s}").read_bytes() if Path(f"{path}{s}").exists() else None for s in ("", "-wal")]


def test_chat_private_saves_nothing_and_says_so(monkeypatch, capsys, services):
    record = services.create_agent("ada", human="Name: Ada")
    services.memory.archival.insert(record.id, "Ada plays the cello on Sundays.")
    services.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before, saved_messages = store_bytes(services.paths.database), services.db.scalar("SELECT count(*) FROM messages")

    runtime = ScriptedRuntime(
        [
            call("core_memory_append", "remember", True, label="human", content=f"Code word: {SECRET}"),
            call("archival_memory_search", "look it up", True, query="cello"),
            say("Noted, and you play the cello."),
        ],
        context_window=16384,
    )
    monkeypatch.setattr(chat_cmd, "open_services", lambda: services)
    monkeypatch.setattr(chat_cmd, "make_runtime", lambda settings: runtime)
    monkeypatch.setattr(services, "close", lambda: None)
    lines = iter([f"My code word is {SECRET}. What do I play?", "/memory", "/quit"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(lines))

    assert chat_cmd.run(argparse.Namespace(agent="ada", verbose=False, no_login=False, private=True)) == 0
    out, err = capsys.readouterr()
    assert "Private chat: nothing of it is saved" in err and "discarded when you quit" in err
    assert "agent> Noted, and you play the cello." in out
    assert f"Code word: {SECRET}" in out  # /memory shows the private chat's own edit while it lasts
    assert "Ada plays the cello" in str(runtime.prompts[-1])  # it read what was saved

    assert store_bytes(services.paths.database) == before
    assert services.db.scalar("SELECT count(*) FROM messages") == saved_messages
    assert services.memory.core.get(record.id, "human").value == "Name: Ada"
    assert all(SECRET.encode() not in (data or b"") for data in store_bytes(services.paths.database))


def test_chat_private_sends_no_login_and_runs_no_background_writers(monkeypatch, capsys, services):
    services.create_agent("ada")
    runtime = ScriptedRuntime([say("Hi!")], context_window=16384)
    monkeypatch.setattr(chat_cmd, "open_services", lambda: services)
    monkeypatch.setattr(chat_cmd, "make_runtime", lambda settings: runtime)
    monkeypatch.setattr(services, "close", lambda: None)
    sessions = []

    def session_of(*args, **kwargs):
        sessions.append(build_session(*args, **kwargs))
        return sessions[-1]

    monkeypatch.setattr(chat_cmd, "build_session", session_of)
    monkeypatch.setattr(
        chat_cmd, "graph_analyser", lambda: (_ for _ in ()).throw(AssertionError("graph extraction started"))
    )
    lines = iter(["hello", "/quit"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(lines))

    assert chat_cmd.run(argparse.Namespace(agent="ada", verbose=False, no_login=False, private=True)) == 0
    assert "agent> Hi!" in capsys.readouterr().out
    assert len(runtime.prompts) == 1  # the user's turn only: no login turn before it
    assert runtime.warmed == []  # nothing warmed: a warm-up keeps its state on disk
    assert sessions[0].graph is None  # no graph extraction, which would write the knowledge graph
