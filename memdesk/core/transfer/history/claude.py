"""Claude's export (Settings > Privacy > Export data): ``conversations.json``, an array of
conversations ``{uuid, name, created_at, updated_at, chat_messages: [...]}``; each message has a
``uuid``, a ``sender`` (human or assistant), ``created_at`` (ISO 8601), its ``text`` and, in newer
exports, ``content`` blocks (text, tool_use, tool_result, thinking), plus ``attachments`` (with
their extracted text) and ``files``. Newer exports also carry ``parent_message_uuid`` and the
conversation's ``current_leaf_message_uuid`` when it branched.

Read from the format as documented by Sinity/polylogue (docs/providers/claude-ai.md) and the
typings of exporters of it: sender, content segments, attachments and files.
"""

from __future__ import annotations

from typing import Any

from memdesk.core.base.errors import ExportShapeError
from memdesk.core.transfer.history.model import CLAUDE, Conversation, Said, text_of
from memdesk.core.transfer.history.parsing import begin, branch, finish, other_speaker, said

ASSISTANT = "Claude"
_ROLES = {"human": "user", "user": "user", "assistant": "assistant"}
_LEFT_OUT = {
    "tool_use": "tool calls are not imported",
    "tool_result": "tool output is not imported",
    "thinking": "the model's reasoning is not imported",
    "redacted_thinking": "the model's reasoning is not imported",
}
ATTACHMENTS = "attached files and images are not imported (add them as documents)"
BRANCHES = "messages on other branches (edited or retried) are not imported"


def looks_like(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("chat_messages"), list)


def parse(value: Any) -> Conversation:
    if not looks_like(value):
        raise ExportShapeError("a Claude conversation without its 'chat_messages'")
    conversation = begin(
        CLAUDE,
        value.get("uuid"),
        value.get("name"),
        ASSISTANT,
        value.get("created_at"),
        value.get("updated_at"),
        without_id="a Claude conversation without a uuid",
    )
    messages = [m for m in value["chat_messages"] if isinstance(m, dict)]
    if len(messages) != len(value["chat_messages"]):
        conversation.left_out["entries that are not messages are not imported"] += len(value["chat_messages"]) - len(
            messages
        )
    kept = _branch(messages, value.get("current_leaf_message_uuid"))
    if len(kept) < len(messages):
        conversation.left_out[BRANCHES] += len(messages) - len(kept)
    return finish(conversation, [_said(message, index, conversation) for index, message in enumerate(kept)])


def _branch(messages: list[dict], leaf: Any) -> list[dict]:
    """The messages on the branch that ends at the current leaf, when the export says which; all
    of them, in order, otherwise. A parent link that loops ends the walk."""
    by_id = {m.get("uuid"): m for m in messages if isinstance(m.get("uuid"), str)}
    if not isinstance(leaf, str) or leaf not in by_id or not any("parent_message_uuid" in m for m in messages):
        return messages
    # A loop is not counted apart: the messages it cut off count as on other branches.
    path, _looped = branch(by_id, leaf, "parent_message_uuid")
    return [by_id[uuid] for uuid in path]


def _said(message: dict, index: int, conversation: Conversation) -> Said | None:
    role = _ROLES.get(str(message.get("sender", "")).lower())
    if role is None:
        other_speaker(conversation, message.get("sender"))
        return None
    texts = []
    blocks = message.get("content")
    if isinstance(blocks, list) and blocks:
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind in _LEFT_OUT:
                conversation.left_out[_LEFT_OUT[kind]] += 1
            else:
                conversation.left_out[f"content of type {str(kind)[:30]!r} is not imported"] += 1
    else:
        texts.append(text_of(message.get("text")))
    for key in ("attachments", "files"):
        found = message.get(key)
        if isinstance(found, list) and found:
            conversation.left_out[ATTACHMENTS] += len(found)
    return said(
        str(message.get("uuid") or f"#{index}"),
        role,
        None if role == "user" else ASSISTANT,
        texts,
        message.get("created_at"),
        f"message {index + 1} has a time",
    )
