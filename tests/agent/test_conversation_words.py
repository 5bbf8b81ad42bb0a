"""The conversation a person reads holds no internal words (issue 35, found as a new user: "—
preempted: background turn cancelled for your message" under the first message). What MemDesk
tells the model (a return, heartbeats, alerts, memory updates) is inner workings, shown only with
them and then in words a user knows; what the user should know (a stopped reply, older messages
leaving the view, a turn cut short) is said plainly. Checked on every stored event the agent
writes and on every event the code reports live, wherever it is reported from."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memdesk.core.agent import events
from memdesk.core.agent.conversation_view import conversation_entries, conversation_markdown
from memdesk.core.memory.recall import Message

#: Words of MemDesk's insides: identifiers, and the names its code gives things.
INTERNAL = re.compile(
    r"\w+_\w+|\b(?:heartbeat|login|preempt\w*|generation|chained|eviction|evicted|memory pressure|"
    r"system alert|automatic recall|background turn|context window|request_heartbeat|json)\b",
    re.IGNORECASE,
)
NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
PACKAGE = Path(__file__).resolve().parents[2] / "memdesk"


def stored(kind: str, content: str, message_id: int = 1) -> Message:
    return Message(message_id, 1, NOW, "user", kind, content, "", None, None, None)


STORED_EVENTS = [
    stored("login", events.login(None, NOW)),
    stored("login", events.login(NOW, NOW)),
    *[
        stored("heartbeat", events.heartbeat(reason, NOW if reason == events.HEARTBEAT_TIMED else None))
        for reason in (
            events.HEARTBEAT_AFTER_CALL,
            events.HEARTBEAT_AFTER_FAILURE,
            events.HEARTBEAT_AFTER_REFUSAL,
            events.HEARTBEAT_TO_READ,
            events.HEARTBEAT_UNANSWERED,
            events.HEARTBEAT_TIMED,
        )
    ],
    stored("system_alert", events.system_alert(events.PRESSURE_ALERT)),
    stored("memory_update", events.memory_update([{"block": "human", "by": "user"}])),
]


@pytest.mark.parametrize("message", STORED_EVENTS, ids=lambda m: f"{m.kind}:{m.content[:40]}")
def test_every_stored_event_reads_in_a_users_words_and_only_with_the_inner_workings(message):
    (entry,) = conversation_entries([message])
    assert entry.detail, "what MemDesk tells the model is not the conversation"
    assert entry.text and not INTERNAL.search(entry.text), entry.text
    assert "{" not in entry.text


def test_the_markdown_export_shows_none_of_them_by_default():
    class Memory:
        class agents:  # noqa: N801 - the one attribute the export reads
            @staticmethod
            def get(agent_id):
                return type("Record", (), {"name": "Sam"})()

        class recall:  # noqa: N801
            @staticmethod
            def as_written(agent_id):
                return STORED_EVENTS

    text = conversation_markdown(Memory, 1)  # type: ignore[arg-type]
    assert text.strip() == "# Conversation with Sam"


def _reported_events() -> list[tuple[str, str, str]]:
    """Every (kind, text, where) the code reports through on_event, its text's literal parts."""
    found = []
    call = re.compile(r"""on_event\(\s*"(\w+)",\s*f?"([^"]*)"\s*\)""")
    for path in sorted(PACKAGE.rglob("*.py")):
        for kind, text in call.findall(path.read_text(encoding="utf-8")):
            found.append((kind, re.sub(r"\{[^}]*\}", "8", text), str(path.relative_to(PACKAGE))))
    return found


def test_every_event_the_code_reports_live_reads_in_a_users_words():
    from memdesk.core.agent.conversation_view import event_entry

    reported = _reported_events()
    assert {kind for kind, _, _ in reported} >= {"stopped", "unanswered", "heartbeat", "step_cap", "alert", "recall"}
    for kind, text, where in reported:
        entry = event_entry(kind, text, NOW)
        assert not INTERNAL.search(entry.text), (where, entry.text)
    # Older messages leaving the view: said plainly, never the summary's own text.
    entry = event_entry("eviction", "Summary: they talked about tea", NOW)
    assert not entry.detail and "summary of them" in entry.text and "tea" not in entry.text


def test_what_the_user_should_know_is_shown_and_the_rest_waits_for_the_inner_workings():
    from memdesk.core.agent.conversation_view import event_entry

    assert not event_entry("stopped", "you stopped the reply", NOW).detail
    assert not event_entry("step_cap", "it stopped after 8 steps in a row", NOW).detail
    assert event_entry("heartbeat", "it checked in on its own", NOW).detail
    assert event_entry("alert", "anything", NOW).detail
