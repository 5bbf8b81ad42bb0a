"""``memdesk chat`` never leaves a message unanswered (issue 22): a message whose turn a kill cut
short is shown and answered when the chat starts again, once; /retry answers one whose reply was
stopped."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from memdesk.cli import chat_cmd
from memdesk.core.agent import unanswered
from memdesk.core.runtime.scripted import ScriptedRuntime, say

ROOT = Path(__file__).resolve().parents[2]

# The real terminal chat in a child process, on a scripted model that hangs in its first reply:
# the parent types a line and kills the child -9 while the reply is being generated.
HANGING_CHAT = r"""
import argparse, sys, time
from memdesk.app.services import open_services
from memdesk.cli import chat_cmd
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime

def hang(_messages):
    print("@generating", flush=True)
    time.sleep(600)

chat_cmd.open_services = lambda: open_services(embedder=HashingEmbedder())
chat_cmd.make_runtime = lambda settings: ScriptedRuntime([hang], context_window=32768)
chat_cmd.input = lambda prompt="": sys.stdin.readline() or "/quit"
chat_cmd.run(argparse.Namespace(agent="sam", verbose=False, no_login=True))
"""


def replies(services, agent_id: int) -> list[str]:
    return [m.search_text for m in services.memory.recall.all(agent_id) if m.kind == "assistant_call" and m.search_text]


def run_chat(monkeypatch, services, runtime, lines, *, wait_for_replies: int = 0) -> None:
    """The chat in this process; the first line is typed once ``wait_for_replies`` replies exist."""
    monkeypatch.setattr(chat_cmd, "open_services", lambda: services)
    monkeypatch.setattr(chat_cmd, "make_runtime", lambda settings: runtime)
    monkeypatch.setattr(services, "close", lambda: None)
    typed = iter(lines)
    first = [True]

    def fake_input(_prompt):
        if first[0] and wait_for_replies:
            first[0] = False
            deadline = time.monotonic() + 30
            while (
                time.monotonic() < deadline
                and len(replies(services, services.agents.get_by_name("sam").id)) < wait_for_replies
            ):
                time.sleep(0.05)
        return next(typed)

    monkeypatch.setattr("builtins.input", fake_input)
    assert chat_cmd.run(argparse.Namespace(agent="sam", verbose=False, no_login=False)) == 0


def test_a_message_whose_chat_was_killed_mid_reply_is_answered_when_the_chat_starts_again(
    monkeypatch, capsys, services, memdesk_home
):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    child = subprocess.Popen(
        [sys.executable, "-c", HANGING_CHAT],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        child.stdin.write("Hi, I am Ada. I live in Lisbon and I love gardening.\n")
        child.stdin.flush()
        for line in child.stdout:
            if line.startswith("@generating"):
                break
        child.send_signal(signal.SIGKILL)
        assert child.wait(30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
    agent = services.agents.get_by_name("sam")
    owed = unanswered.newest(services.db, services.memory.recall, agent.id)
    assert owed is not None and owed.search_text.startswith("Hi, I am Ada")

    runtime = ScriptedRuntime([say("Welcome back, Ada. How is the garden in Lisbon?")], context_window=32768)
    run_chat(monkeypatch, services, runtime, ["/quit"], wait_for_replies=1)
    out, err = capsys.readouterr()
    assert "not answered yet" in err and "Hi, I am Ada" in err
    assert "agent> Welcome back, Ada. How is the garden in Lisbon?" in out
    assert replies(services, agent.id) == ["Welcome back, Ada. How is the garden in Lisbon?"]
    kinds = [m.kind for m in services.memory.recall.all(agent.id)]
    assert "login" not in kinds  # the answer went first; the user was here, no login turn

    again = ScriptedRuntime([say("unused")], context_window=32768)
    run_chat(monkeypatch, services, again, ["/quit"])
    assert again.prompts == []  # answered once: nothing owed the next time
    assert "not answered yet" not in capsys.readouterr().err


def test_retry_answers_the_message_whose_reply_was_stopped(monkeypatch, capsys, services):
    def ctrl_c(_messages):  # the user presses Ctrl+C while the reply is generated
        raise KeyboardInterrupt

    runtime = ScriptedRuntime([ctrl_c, say("Here is the story.")], context_window=32768)
    monkeypatch.setattr(chat_cmd, "open_services", lambda: services)
    monkeypatch.setattr(chat_cmd, "make_runtime", lambda settings: runtime)
    monkeypatch.setattr(services, "close", lambda: None)
    lines = iter(["Tell me a story", "/retry", "/retry", "/quit"])
    monkeypatch.setattr("builtins.input", lambda _prompt: next(lines))
    assert chat_cmd.run(argparse.Namespace(agent="sam", verbose=False, no_login=True)) == 0
    out, err = capsys.readouterr()
    assert "[stopped; /retry answers your message]" in err
    assert "agent> Here is the story." in out
    assert "every message has its reply" in err  # the second /retry: nothing owed
    agent = services.agents.get_by_name("sam")
    assert replies(services, agent.id) == ["Here is the story."]
    assert unanswered.newest(services.db, services.memory.recall, agent.id) is None


def test_a_reply_stopped_with_ctrl_c_is_still_not_answered_after_a_restart_until_retry(monkeypatch, capsys, services):
    def ctrl_c(_messages):
        raise KeyboardInterrupt

    stopping = ScriptedRuntime([ctrl_c], context_window=32768)
    run_chat_lines = ["Tell me a story", "/quit"]
    monkeypatch.setattr(chat_cmd, "open_services", lambda: services)
    monkeypatch.setattr(chat_cmd, "make_runtime", lambda settings: stopping)
    monkeypatch.setattr(services, "close", lambda: None)
    lines = iter(run_chat_lines)
    monkeypatch.setattr("builtins.input", lambda _prompt: next(lines))
    assert chat_cmd.run(argparse.Namespace(agent="sam", verbose=False, no_login=True)) == 0
    capsys.readouterr()

    # The next start says so, and waits for the user: the model is not asked on its own.
    restarted = ScriptedRuntime([say("Here is the story.")], context_window=32768)
    monkeypatch.setattr(chat_cmd, "make_runtime", lambda settings: restarted)
    lines = iter(["/quit"])
    assert chat_cmd.run(argparse.Namespace(agent="sam", verbose=False, no_login=True)) == 0
    err = capsys.readouterr().err
    assert "not answered: you stopped the reply" in err and "Tell me a story" in err and "/retry" in err
    assert restarted.prompts == []

    lines = iter(["/retry", "/quit"])
    assert chat_cmd.run(argparse.Namespace(agent="sam", verbose=False, no_login=True)) == 0
    assert "agent> Here is the story." in capsys.readouterr().out
    agent = services.agents.get_by_name("sam")
    assert replies(services, agent.id) == ["Here is the story."]
