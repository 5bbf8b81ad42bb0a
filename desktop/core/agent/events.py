"""The JSON events the model reads, all as user-role messages (MemGPT's format)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from desktop.core.clock import event_time

HIDDEN = "[This is an automated system message hidden from the user]"
HEARTBEAT_AFTER_CALL = f"{HIDDEN} Function called using request_heartbeat=true, returning control"
HEARTBEAT_AFTER_FAILURE = f"{HIDDEN} Function call failed, returning control"
HEARTBEAT_TIMED = f"{HIDDEN} Timed heartbeat: you may think, save memories or message the user if there is a reason to"
PRESSURE_ALERT = (
    f"{HIDDEN} Warning: the conversation history will soon reach its maximum length and be trimmed. "
    "Save any important information from the conversation to core memory or archival memory now."
)


def _dump(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


def user_message(text: str, now: datetime) -> str:
    return _dump({"type": "user_message", "message": text, "time": event_time(now)})


def login(last_login: datetime | None, now: datetime) -> str:
    last = event_time(last_login) if last_login else "Never (first login)"
    return _dump({"type": "login", "last_login": last, "time": event_time(now)})


def heartbeat(reason: str, now: datetime) -> str:
    return _dump({"type": "heartbeat", "reason": reason, "time": event_time(now)})


def system_alert(message: str) -> str:
    return _dump({"type": "system_alert", "message": message})


def function_result(ok: bool, message: str, now: datetime) -> str:
    return _dump({"status": "OK" if ok else "Failed", "message": message, "time": event_time(now)})


def summary_note(hidden: int, total: int, summary: str) -> str:
    return (
        f"Note: prior messages ({hidden} of {total} total messages) have been hidden from view due to conversation memory "
        f"constraints. The following is a summary of the previous {hidden} messages:\n{summary}"
    )
