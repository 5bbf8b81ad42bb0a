"""The session's own rules, against the Session with a scripted model: what the front ends share."""

from __future__ import annotations

import threading
from pathlib import Path

from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.storage import open_database
from memdesk.session.jobs import JobThread
from memdesk.session.sent_before_open import SentBeforeOpen
from tests.session.drivers import SessionDriver, wait_until


def committed(services, agent_id: int) -> list[tuple[str, str]]:
    """What another connection sees: only what is committed (what a kill -9 would leave)."""
    other = open_database(services.paths.database)
    try:
        rows = other.query("SELECT kind, search_text FROM messages WHERE agent_id = ? ORDER BY id", (agent_id,))
        return [(r[0], r[1]) for r in rows]
    finally:
        other.close()


def test_a_message_is_committed_before_the_background_turn_is_preempted(services, agent_id, monkeypatch):
    services.settings_store.set("login_after_minutes", 60)
    started, release = threading.Event(), threading.Event()

    def blocked_login(_messages):
        started.set()
        release.wait(30)  # a prompt batch or a tool: the login lets go of the model only later
        return say("Welcome back!")

    at_preempt = []
    submit = JobThread.submit

    def observed(self, run, *, user=False):
        if user:
            at_preempt.append(committed(services, agent_id))
            release.set()
        return submit(self, run, user=user)

    monkeypatch.setattr(JobThread, "submit", observed)
    runtime = ScriptedRuntime([blocked_login, say("Hi Ada!")], context_window=32768)
    conversation = SessionDriver(services, lambda _s: runtime, agent_id)
    try:
        assert started.wait(30)
        turn = conversation.session.send("I am Ada")
        assert turn.done.wait(30)
    finally:
        release.set()
        conversation.close()
    assert at_preempt == [[("login", ""), ("user_message", "I am Ada")]]
    assert [kind for kind, _ in committed(services, agent_id)] == [
        "login",
        "user_message",
        "assistant_call",
        "function_result",
    ]


def test_a_private_chat_writes_nothing_and_runs_no_idle_work(services, agent_id, idle_after):
    idle_after(heartbeat=0.05, consolidation=0.05, retention=0.05)
    saved = services.db.scalar("SELECT count(*) FROM messages")
    runtime = ScriptedRuntime(
        [call("core_memory_append", "note", heartbeat=True, label="human", content="Secret: x"), say("Safe.")],
        context_window=32768,
    )
    conversation = SessionDriver(services, lambda _s: runtime, agent_id)
    try:
        conversation.wait_open()
        session = conversation.session
        session.start_private(agent_id)
        assert conversation.listener.private_started.wait(30)  # the copy is made
        assert session.private and not session.may_run_on_its_own()
        assert session.send("My secret").done.wait(30)
        threading.Event().wait(0.3)  # idle time passes: no heartbeat, pass or retention runs
        assert len(runtime.prompts) == 2  # the turn's two steps, nothing else
    finally:
        conversation.close()
    assert services.db.scalar("SELECT count(*) FROM messages") == saved
    assert "Secret" not in services.memory.core.get(agent_id, "human").value


def test_an_agent_opened_after_a_gap_greets_the_user_with_a_login_turn(services, agent_id):
    services.settings_store.set("login_after_minutes", 60)
    runtime = ScriptedRuntime([say("Welcome back!")], context_window=32768)
    conversation = SessionDriver(services, lambda _s: runtime, agent_id)
    try:
        assert wait_until(lambda: [k for k, _ in committed(services, agent_id)][:1] == ["login"])
        conversation.wait_idle()
    finally:
        conversation.close()
    assert "Welcome back!" in [text for _kind, text in committed(services, agent_id)]


def test_messages_sent_before_the_window_opened_are_saved_and_answered_once(services, agent_id, tmp_path: Path):
    inbox = SentBeforeOpen(tmp_path / "sent.jsonl")
    inbox.add("Hi, I am Ada.")
    inbox.add("I live in Lisbon.")
    runtime = ScriptedRuntime([say("Hello Ada in Lisbon!")], context_window=32768)
    conversation = SessionDriver(services, lambda _s: runtime, agent_id)
    try:
        conversation.wait_open()
        delivered = conversation.session.deliver_sent_before_open(inbox)
        assert [text for _message, text in delivered] == ["Hi, I am Ada.", "I live in Lisbon."]
        assert conversation.session.deliver_sent_before_open(inbox) == []  # once: the file is gone
        assert wait_until(lambda: "Hello Ada in Lisbon!" in [t for _k, t in committed(services, agent_id)])
        conversation.wait_idle()
    finally:
        conversation.close()
    assert len(runtime.prompts) == 1  # one turn answered both
    assert not inbox.path.exists()
