"""The terminal chat announces a retention policy that waits for confirmation, and never applies it
unconfirmed (memdesk retention NAME --apply confirms it)."""

from __future__ import annotations

import argparse
from datetime import timedelta

from memdesk.app.operations import open_retention
from memdesk.app.services import open_services
from memdesk.cli import chat_cmd
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime


def test_an_unconfirmed_policy_is_announced_at_start_and_nothing_is_removed(memdesk_home, monkeypatch, capsys):
    services = open_services(embedder=HashingEmbedder())
    record = services.create_agent("sam")
    old = services.clock.now() - timedelta(days=90)
    services.memory.recall.add(
        record.id, role="user", kind="user_message", content="old", search_text="old", created_at=old
    )
    open_retention(services).set_days(record.id, 30)
    services.close()
    monkeypatch.setattr(chat_cmd, "open_services", lambda: open_services(embedder=HashingEmbedder()))
    monkeypatch.setattr(chat_cmd, "make_runtime", lambda settings: ScriptedRuntime(context_window=16384))
    monkeypatch.setattr("builtins.input", lambda prompt: "/quit")
    assert chat_cmd.run(argparse.Namespace(agent="sam", verbose=False, no_login=True)) == 0
    err = capsys.readouterr().err
    assert "[retention: 1 conversation messages older than 30 days" in err and "memdesk retention sam --apply" in err
    services = open_services(embedder=HashingEmbedder())
    assert services.memory.recall.count(record.id) == 1
    services.close()
