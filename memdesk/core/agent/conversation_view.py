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
    "call" (any other function call, with its result), "event" (what the user should know: a
    stopped reply, older messages leaving the view) or "workings" (what MemDesk told the model: a
    return, a heartbeat, an alert); events are in the user's words (``event_words``)."""

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
        return self.kind in ("thought", "call", "memories", "workings")


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None


#: What each heartbeat reason means, for a person.
_HEARTBEATS = {
    events.HEARTBEAT_AFTER_CALL: "it went on after a step",
    events.HEARTBEAT_AFTER_FAILURE: "a step failed; it tried again",
    events.HEARTBEAT_AFTER_REFUSAL: "a step was refused; it answered instead",
    events.HEARTBEAT_TO_READ: "it read what it had found",
    events.HEARTBEAT_UNANSWERED: "it had not answered yet, so it answered",
    events.HEARTBEAT_TIMED: "it checked in on its own",
}
_LONG_CONVERSATION = "the conversation grew long: it was asked to save what matters"
#: Events that are the user's business (shown); every other one is MemDesk talking to the model,
#: shown only with the inner workings.
_SHOWN = frozenset({"stopped", "unanswered", "step_cap", "eviction", "memory_conflict"})


def event_words(kind: str, text: str) -> tuple[str, bool]:
    """An event as a person reads it: (the words, whether it is inner workings). ``kind`` and
    ``text`` are an observer's event (AgentObserver.on_event) or a stored event's kind and
    content. No internal name (heartbeat, login, system_alert...) reaches the conversation."""
    data = _load(text)
    data = data if isinstance(data, dict) else {}
    if kind == "heartbeat":
        reason = str(data.get("reason", ""))
        words = _HEARTBEATS.get(reason, _HEARTBEATS[events.HEARTBEAT_TIMED] if not data else "it went on by itself")
    elif kind == "login":
        last = str(data.get("last_login", ""))
        words = "your first visit" if not last or last.startswith("Never") else f"you came back (last time: {last})"
    elif kind in ("system_alert", "alert"):
        words = _LONG_CONVERSATION
    elif kind == "memory_update":
        words = "it was told about the memory changes made meanwhile"
    elif kind == "memory_conflict":  # told to the model by sync (core/sync/conflicts.py)
        block = str(data.get("block", "")) or "a"
        words = (
            f"two of your devices changed its {block} memory at the same time: both versions are kept"
            " until it or you edit it (File > Devices… lists it)"
        )
    elif kind == "repeated":
        words = "its reply repeated an earlier message, so it answered again"
    elif kind == "eviction":
        words = "older messages moved out of its view; it keeps a summary of them"
    elif data:  # another stored event: what it says, never its JSON
        words = str(data.get("message") or data.get("reason") or "a note from MemDesk")
    else:
        words = text
    return words.replace(events.HIDDEN, "").strip(), kind not in _SHOWN


def event_entry(kind: str, text: str, at: datetime, message_id: int | None = None) -> Entry:
    """The conversation's entry for an event (``event_words``)."""
    words, workings = event_words(kind, text)
    return Entry("workings" if workings else "event", words, at, message_id=message_id)


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
            entries.append(event_entry(message.kind, message.content, message.created_at, message.id))
    return entries


def conversation_markdown(memory: MemoryServices, agent_id: int, *, include_details: bool = False) -> str:
    record = memory.agents.get(agent_id)
    lines = [f"# Conversation with {record.name}", ""]
    for entry in conversation_entries(memory.recall.as_written(agent_id)):
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
