"""The conversation as a person reads it: stored messages turned back into what the window's chat
view shows (``conversation_entries``), and the Markdown export made of the same entries, so both
show the same conversation."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memdesk.core.agent import events
from memdesk.core.agent.recall.events import memories_text
from memdesk.core.memory.recall import Message

if TYPE_CHECKING:
    from memdesk.core.memory.services import MemoryServices


@dataclass
class Entry:
    """One thing a person sees in the conversation.

    ``kind``: "user" (their message), "agent" (a send_message), "thought" (inner monologue),
    "call" (any other function call, with its result) or "event" (login, heartbeat, alert)."""

    kind: str
    text: str
    at: datetime
    function: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    result: str = ""
    ok: bool = True
    message_id: int | None = None  # the stored message it shows (a call's result folds into the call)

    @property
    def detail(self) -> bool:
        """Hidden unless the user asks to see the agent's inner workings."""
        return self.kind in ("thought", "call", "memories")


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None


def _event_text(message: Message) -> str:
    data = _load(message.content)
    if not isinstance(data, dict):
        return message.content
    text = str(data.get("reason") or data.get("message") or data.get("type") or message.kind)
    if message.kind == "login":
        text = f"login (last login: {data.get('last_login', 'unknown')})"
    return text.replace(events.HIDDEN, "").strip()


def conversation_entries(messages: list[Message]) -> list[Entry]:
    entries: list[Entry] = []
    calls: dict[int, Entry] = {}
    for message in messages:
        if message.kind == "user_message":
            data = _load(message.content)
            text = data.get("message", message.content) if isinstance(data, dict) else message.content
            entries.append(Entry("user", str(text), message.created_at, message_id=message.id))
        elif message.kind == "assistant_call":
            data = _load(message.content)
            params = data.get("params", {}) if isinstance(data, dict) else {}
            params = dict(params) if isinstance(params, dict) else {}
            thoughts = str(params.pop("inner_thoughts", "") or "")
            params.pop("request_heartbeat", None)
            function = message.function_name or (data.get("function", "") if isinstance(data, dict) else "")
            if thoughts:
                entries.append(Entry("thought", thoughts, message.created_at, message_id=message.id))
            if function == "send_message" and isinstance(params.get("message"), str) and message.search_text:
                entries.append(
                    Entry("agent", params["message"], message.created_at, function=function, message_id=message.id)
                )
            else:
                call = Entry(
                    "call",
                    message.content if data is None else "",
                    message.created_at,
                    function=str(function),
                    arguments=params,
                    message_id=message.id,
                )
                calls[message.id] = call
                entries.append(call)
        elif message.kind == "function_result":
            data = _load(message.content)
            answered = calls.get(message.step_id or -1)
            if answered is not None and isinstance(data, dict):
                answered.result = str(data.get("message", ""))
                answered.ok = data.get("status") == "OK"
        elif message.kind == "memories":  # automatic recall: what the reply that follows had in front of it
            data = _load(message.content)
            lines = data.get("memories", []) if isinstance(data, dict) else []
            entries.append(Entry("memories", memories_text(lines), message.created_at, message_id=message.id))
        else:
            entries.append(
                Entry("event", f"{message.kind}: {_event_text(message)}", message.created_at, message_id=message.id)
            )
    return entries


def conversation_markdown(memory: MemoryServices, agent_id: int, *, include_details: bool = False) -> str:
    record = memory.agents.get(agent_id)
    lines = [f"# Conversation with {record.name}", ""]
    for entry in conversation_entries(memory.recall.all(agent_id)):
        if entry.detail and not include_details:
            continue
        stamp = entry.at.strftime("%Y-%m-%d %H:%M")
        if entry.kind == "user":
            lines += [f"**You** · {stamp}", "", entry.text, ""]
        elif entry.kind == "agent":
            lines += [f"**{record.name}** · {stamp}", "", entry.text, ""]
        elif entry.kind == "thought":
            lines += [f"> *thinking:* {entry.text}", ""]
        elif entry.kind == "call":
            status = "ok" if entry.ok else "failed"
            lines += [
                f"> `{entry.function}({json.dumps(entry.arguments, ensure_ascii=False)})` → {status}: {entry.result}",
                "",
            ]
        else:
            lines += [f"*{entry.text}* · {stamp}", ""]
    return "\n".join(lines).rstrip() + "\n"
