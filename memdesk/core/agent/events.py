"""The JSON events the model reads, all as user-role messages (MemGPT's format)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from memdesk.core.base.clock import event_time

#: Older versions prefixed every hidden event with this; the system prompt now says once that
#: events come from MemDesk and the user does not see them (kept to clean up old transcripts).
HIDDEN = "[This is an automated system message hidden from the user]"
# Heartbeat reasons: the model needs the reason, not a paragraph (every event stays in context).
HEARTBEAT_AFTER_CALL = "request_heartbeat=true"
HEARTBEAT_AFTER_FAILURE = "the call failed: fix it or answer"
HEARTBEAT_AFTER_REFUSAL = "the call was refused: answer the user now"
HEARTBEAT_TO_READ = "read the result"
HEARTBEAT_UNANSWERED = "you have not answered the user: answer now"
HEARTBEAT_TIMED = "timed: act only if there is a reason"
PRESSURE_ALERT = (
    "Context almost full: older messages will soon be hidden. Save what matters to core or archival memory now."
)


def _dump(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


def user_message(text: str, now: datetime) -> str:
    return _dump({"type": "user_message", "message": text, "time": event_time(now)})


def login(last_login: datetime | None, now: datetime) -> str:
    last = event_time(last_login) if last_login else "Never (first login)"
    return _dump({"type": "login", "last_login": last, "time": event_time(now)})


def heartbeat(reason: str, now: datetime | None = None) -> str:
    """A heartbeat; ``now`` only for timed heartbeats (a chained one follows its call at once)."""
    payload: dict[str, Any] = {"type": "heartbeat", "reason": reason}
    if now is not None:
        payload["time"] = event_time(now)
    return _dump(payload)


def system_alert(message: str) -> str:
    return _dump({"type": "system_alert", "message": message})


def function_result(ok: bool, message: str) -> str:
    # No time: the call happened right after the event that carries one.
    return _dump({"status": "OK" if ok else "Failed", "message": message})


def memory_update(changes: list[dict[str, Any]]) -> str:
    """Someone other than the agent (the user, an import, consolidation) changed memory since the
    memory section was rendered; see ``memory_view``."""
    return _dump({"type": "memory_update", "changes": changes})


def summary_note(hidden: int, total: int, summary: str) -> str:
    return (
        f"Note: prior messages ({hidden} of {total} total messages)"
        " have been hidden from view due to conversation memory "
        f"constraints. The following is a summary of the previous {hidden} messages:\n{summary}"
    )
