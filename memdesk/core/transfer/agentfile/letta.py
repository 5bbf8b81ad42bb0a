"""Letta's AgentFileSchema (letta-ai/letta, ``letta/schemas/agent_file.py``) as plain dicts, and
the mapping between Letta's messages and MemDesk's.

MemDesk stores what the model saw: user-role JSON events (user_message, login, heartbeat,
system_alert), one assistant message per function call (``{"function", "params"}`` with the inner
thoughts inside), and a function result per call. Letta stores role ``user`` / ``assistant`` (with
``tool_calls`` and reasoning content) / ``tool`` (with ``tool_call_id``) / ``system`` messages.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from memdesk.core.agent import events
from memdesk.core.base.clock import iso, parse_iso
from memdesk.core.memory.recall import Message

#: Ids in an agent file are ``<prefix>-<n>`` (Letta validates this on import).
AGENT, BLOCK, TOOL, MESSAGE, GROUP = "agent", "block", "tool", "message", "group"

#: MemDesk built-ins that Letta also ships, with Letta's tool type: exported so Letta binds its own.
LETTA_BUILTINS = {
    "send_message": "letta_core",
    "conversation_search": "letta_core",
    "archival_memory_insert": "letta_core",
    "archival_memory_search": "letta_core",
    "core_memory_append": "letta_memory_core",
    "core_memory_replace": "letta_memory_core",
}
#: Letta memory tools whose job a MemDesk built-in does (the model sees MemDesk's instead).
LETTA_EQUIVALENTS = {
    "memory_insert": "core_memory_append",
    "memory_replace": "core_memory_replace",
    "memory": "core_memory_append and core_memory_replace",
    "memory_rethink": "core_memory_replace",
    "conversation_search_date": "conversation_search_date",
    "pause_heartbeats": "pause_heartbeats",
    "send_message": "send_message",
}
#: Why a Letta tool type cannot come along.
UNMAPPED_TOOL_TYPES = {
    "letta_multi_agent_core": "a multi-agent tool (MemDesk agents do not message each other)",
    "letta_builtin": "a Letta server tool (web search, code sandbox, web fetch) that MemDesk does not have offline",
    "letta_files_core": "a Letta file tool (MemDesk searches documents through archival memory)",
    "external_mcp": "an MCP server tool: it comes with its server's tools once that server is enabled",
    "external_composio": "a Composio tool (a cloud service)",
    "letta_voice_sleeptime_core": "a Letta voice sleep-time tool",
    "letta_sleeptime_core": "a Letta sleep-time memory tool",
    "letta_memory_core": "a Letta memory tool",
    "letta_core": "a Letta core tool",
}
USER_EVENTS = ("user_message", "login", "heartbeat", "system_alert")
SUMMARY_MARKER = "hidden from view due to conversation memory"


def file_id(prefix: str, number: int) -> str:
    return f"{prefix}-{number}"


# --- MemDesk -> Letta --------------------------------------------------------------------------
def _message_base(message_id: str, agent_ref: str, role: str, created_at: datetime) -> dict[str, Any]:
    return {
        "type": "message",
        "role": role,
        "content": [],
        "name": None,
        "otid": None,
        "sender_id": None,
        "batch_item_id": None,
        "group_id": None,
        "id": message_id,
        "model": None,
        "agent_id": agent_ref,
        "tool_calls": None,
        "tool_call_id": None,
        "tool_returns": [],
        "created_at": iso(created_at),
        "approve": None,
        "approval_request_id": None,
        "denial_reason": None,
        "approvals": [],
    }


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "signature": None}


def system_message(message_id: str, agent_ref: str, text: str, created_at: datetime) -> dict[str, Any]:
    message = _message_base(message_id, agent_ref, "system", created_at)
    message["content"] = [text_part(text)]
    return message


def summary_message(message_id: str, agent_ref: str, summary: str, created_at: datetime) -> dict[str, Any]:
    """Letta keeps the recursive summary as a system alert at the head of the context."""
    message = _message_base(message_id, agent_ref, "user", created_at)
    message["content"] = [text_part(events.system_alert(summary))]
    return message


def call_id_for(message_id: str) -> str:
    return f"call-{message_id}"


def to_letta(message: Message, message_id: str, agent_ref: str, call_refs: dict[int, str]) -> dict[str, Any]:
    """One MemDesk message as a Letta message. ``call_refs`` maps MemDesk call ids to file ids
    (a function result names its call's ``tool_call_id``); only calls that parsed are in it."""
    if message.kind == "assistant_call":
        letta = _message_base(message_id, agent_ref, "assistant", message.created_at)
        try:
            data = json.loads(message.content)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("params"), dict):
            params = dict(data["params"])
            thoughts = params.pop("inner_thoughts", "")
            if thoughts:
                letta["content"] = [
                    {"type": "reasoning", "is_native": False, "reasoning": str(thoughts), "signature": None}
                ]
            letta["tool_calls"] = [
                {
                    "id": call_id_for(message_id),
                    "type": "function",
                    "function": {
                        "name": message.function_name or str(data.get("function", "")),
                        "arguments": json.dumps(params, ensure_ascii=False),
                    },
                }
            ]
        else:  # the model's output did not parse: keep it as text
            letta["content"] = [text_part(message.content)]
        return letta
    call_ref = (
        call_refs.get(message.step_id) if message.kind == "function_result" and message.step_id is not None else None
    )
    if call_ref is not None:  # a result of a call that parsed; one of an unparseable output is a user event
        letta = _message_base(message_id, agent_ref, "tool", message.created_at)
        letta["content"] = [text_part(message.content)]
        letta["name"] = message.function_name
        call = call_ref
        if call is not None:
            letta["tool_call_id"] = call_id_for(call)
            try:
                ok = json.loads(message.content).get("status") == "OK"
            except (json.JSONDecodeError, AttributeError):
                ok = True
            letta["tool_returns"] = [
                {
                    "tool_call_id": call_id_for(call),
                    "status": "success" if ok else "error",
                    "stdout": None,
                    "stderr": None,
                    "func_response": message.content,
                }
            ]
        return letta
    letta = _message_base(message_id, agent_ref, "user" if message.role == "user" else message.role, message.created_at)
    letta["content"] = [text_part(message.content)]
    letta["name"] = message.author
    return letta


def letta_text(letta: dict[str, Any]) -> str:
    """The text a Letta message carries (``content`` is a string or a list of parts)."""
    content = letta.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(part.get("text", "")) for part in content if isinstance(part, dict) and part.get("type") == "text"
    )


def letta_reasoning(letta: dict[str, Any]) -> str:
    content = letta.get("content")
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(part.get("reasoning", ""))
        for part in content
        if isinstance(part, dict) and part.get("type") == "reasoning" and part.get("reasoning")
    )


# --- Letta -> MemDesk --------------------------------------------------------------------------
class Incoming:
    """A message to store: MemDesk's fields, with ``call_ref`` naming the call a result answers."""

    __slots__ = ("ref", "role", "kind", "content", "search_text", "author", "function_name", "call_ref", "created_at")

    def __init__(
        self,
        ref: str,
        role: str,
        kind: str,
        content: str,
        created_at: datetime,
        *,
        search_text: str = "",
        author: str | None = None,
        function_name: str | None = None,
        call_ref: str | None = None,
    ) -> None:
        self.ref, self.role, self.kind, self.content, self.created_at = ref, role, kind, content, created_at
        self.search_text, self.author, self.function_name, self.call_ref = search_text, author, function_name, call_ref


def created_at_of(letta: dict[str, Any], fallback: datetime) -> datetime:
    value = letta.get("created_at")
    if isinstance(value, str):
        try:
            return parse_iso(value.replace("Z", "+00:00"))
        except (ValueError, OverflowError):  # not a time, or one past the calendar's ends
            pass
    return fallback


def user_incoming(ref: str, letta: dict[str, Any], at: datetime) -> Incoming:
    text = letta_text(letta)
    author = letta.get("name") if isinstance(letta.get("name"), str) else None
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        data = None
    if isinstance(data, dict) and data.get("type") in USER_EVENTS:
        said = str(data.get("message", "")) if data["type"] == "user_message" else ""
        return Incoming(ref, "user", data["type"], text, at, search_text=said, author=author)
    # A plain-text user message (Letta v1 agents): wrapped as the event MemDesk's model reads.
    return Incoming(ref, "user", "user_message", events.user_message(text, at), at, search_text=text, author=author)


def assistant_incoming(ref: str, letta: dict[str, Any], at: datetime) -> list[Incoming]:
    """One MemDesk call per Letta tool call; a reply without tool calls becomes send_message."""
    thoughts = letta_reasoning(letta)
    text = letta_text(letta)
    calls = [c for c in (letta.get("tool_calls") or []) if isinstance(c, dict)]
    out: list[Incoming] = []
    if calls and text and not thoughts:
        thoughts, text = text, ""  # MemGPT-style agents put the inner monologue in the text
    if text or not calls:
        params = {"inner_thoughts": thoughts, "message": text}
        out.append(
            Incoming(
                f"{ref}#reply" if calls else ref,
                "assistant",
                "assistant_call",
                json.dumps({"function": "send_message", "params": params}, ensure_ascii=False),
                at,
                search_text=text,
                function_name="send_message",
            )
        )
        thoughts = ""
    for index, call in enumerate(calls):
        function = call.get("function") or {}
        name = str(function.get("name", "")) if isinstance(function, dict) else ""
        raw = function.get("arguments", "{}") if isinstance(function, dict) else "{}"
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else dict(raw)
        except (json.JSONDecodeError, TypeError, ValueError):
            arguments = {"arguments": raw}
        if not isinstance(arguments, dict):
            arguments = {"arguments": arguments}
        params = {"inner_thoughts": thoughts if index == 0 else "", **arguments}
        said = str(arguments.get("message", "")) if name == "send_message" else ""
        call_ref = str(call.get("id") or f"{ref}#{index}")
        out.append(
            Incoming(
                call_ref,
                "assistant",
                "assistant_call",
                json.dumps({"function": name, "params": params}, ensure_ascii=False),
                at,
                search_text=said,
                function_name=name or None,
            )
        )
    return out


def tool_incoming(ref: str, letta: dict[str, Any], at: datetime) -> Incoming:
    text = letta_text(letta)
    returns = [r for r in (letta.get("tool_returns") or []) if isinstance(r, dict)]
    if not text and returns:
        text = str(returns[0].get("func_response") or "")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        data = None
    if not (isinstance(data, dict) and "status" in data):
        status = returns[0].get("status") if returns else "success"
        text = events.function_result(status != "error", text)
    call_ref = letta.get("tool_call_id") or (returns[0].get("tool_call_id") if returns else None)
    name = letta.get("name") if isinstance(letta.get("name"), str) else None
    return Incoming(
        ref, "user", "function_result", text, at, function_name=name, call_ref=str(call_ref) if call_ref else None
    )
