"""ChatGPT's export (Settings > Data controls > Export data): a zip whose ``conversations.json`` is
an array of conversations, each a tree of nodes under ``mapping`` (node id -> ``{id, message,
parent, children}``), with ``current_node`` the leaf the conversation ended on. Editing a message or
regenerating an answer adds a branch; the other branches stay in the tree.

Read from the format as the community documents it (mitkury/chatgpt-export-parser,
docs/chatgpt-data-export-format.md): ``message.author.role`` is user, assistant, system or tool;
``message.content`` has a ``content_type`` (text, multimodal_text with image parts, code and
execution_output for tools, thoughts, tether_* for browsing, user_editable_context for custom
instructions) and ``parts``; ``recipient`` other than "all" marks a call to a tool; times are POSIX
seconds. The branch that ends at ``current_node`` is imported; the others are counted as left out.
"""

from __future__ import annotations

from typing import Any

from memdesk.core.base.errors import ExportShapeError
from memdesk.core.transfer.history.model import CHATGPT, Conversation, Said
from memdesk.core.transfer.history.parsing import LOOP, begin, branch, finish, other_speaker, said

ASSISTANT = "ChatGPT"
#: Kinds of content that are not words someone wrote to the other (why each is left out).
_LEFT_OUT = {
    "code": "tool calls are not imported",
    "execution_output": "tool output is not imported",
    "tether_browsing_display": "browsing results are not imported",
    "tether_quote": "browsing results are not imported",
    "system_error": "error notices are not imported",
    "user_editable_context": "custom instructions are not imported",
    "thoughts": "the model's reasoning is not imported",
    "reasoning_recap": "the model's reasoning is not imported",
}
IMAGES = "images and files are not imported"
BRANCHES = "messages on other branches (edited or regenerated) are not imported"


def looks_like(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("mapping"), dict)


def parse(value: Any) -> Conversation:
    if not looks_like(value):
        raise ExportShapeError("a ChatGPT conversation without its 'mapping' of messages")
    mapping: dict = value["mapping"]
    conversation = begin(
        CHATGPT,
        value.get("conversation_id") or value.get("id"),
        value.get("title"),
        ASSISTANT,
        value.get("create_time"),
        value.get("update_time"),
        without_id="a ChatGPT conversation without an id",
    )
    leaf = value.get("current_node")
    if not isinstance(leaf, str) or leaf not in mapping:
        leaf = _newest_leaf(mapping)
    path, looped = branch(mapping, leaf, "parent")
    if looped:
        conversation.left_out[LOOP] += 1
    found = [_said(mapping[node_id], node_id, conversation) for node_id in path]
    on_path = set(path)
    others = sum(
        1
        for node_id, node in mapping.items()
        if node_id not in on_path and isinstance(node, dict) and _is_words(node.get("message"))
    )
    if others:
        conversation.left_out[BRANCHES] += others
    return finish(conversation, found)


def _newest_leaf(mapping: dict) -> str | None:
    """Without a usable ``current_node``: the leaf written last."""
    best, best_time = None, float("-inf")
    for node_id, node in mapping.items():
        if not isinstance(node, dict) or node.get("children"):
            continue
        message = node.get("message")
        at = message.get("create_time") if isinstance(message, dict) else None
        at = at if isinstance(at, int | float) and not isinstance(at, bool) else 0.0
        if at >= best_time:
            best, best_time = node_id, at
    return best


def _is_words(message: Any) -> bool:
    if not isinstance(message, dict):
        return False
    author = message.get("author")
    role = author.get("role") if isinstance(author, dict) else None
    content = message.get("content")
    return role in ("user", "assistant") and isinstance(content, dict) and content.get("content_type") == "text"


def _said(node: Any, node_id: str, conversation: Conversation) -> Said | None:
    message: Any = node.get("message") if isinstance(node, dict) else None
    if message is None:
        return None  # the tree's root and placeholders hold no message
    if not isinstance(message, dict):
        raise ExportShapeError(f"message {node_id} is not an object")
    author: Any = message.get("author") if isinstance(message.get("author"), dict) else {}
    role = author.get("role")
    metadata: Any = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
    if role in ("system", "tool") or metadata.get("is_visually_hidden_from_conversation"):
        if role == "tool":
            conversation.left_out["tool output is not imported"] += 1
        return None  # hidden system prompts and custom instructions are not the conversation
    if role not in ("user", "assistant"):
        other_speaker(conversation, role)
        return None
    if message.get("recipient") not in (None, "all"):
        conversation.left_out["tool calls are not imported"] += 1
        return None
    content: Any = message.get("content") if isinstance(message.get("content"), dict) else {}
    kind = content.get("content_type", "text")
    if kind in _LEFT_OUT:
        conversation.left_out[_LEFT_OUT[kind]] += 1
        return None
    if kind not in ("text", "multimodal_text"):
        conversation.left_out[f"content of type {str(kind)[:30]!r} is not imported"] += 1
        return None
    texts = []
    parts = content.get("parts")
    for part in parts if isinstance(parts, list) else [content.get("text")]:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif part is not None:
            conversation.left_out[IMAGES] += 1
    name = author.get("name") if isinstance(author.get("name"), str) and author.get("name") else None
    return said(
        str(message.get("id") or node_id),
        role,
        name if role == "user" else (name or ASSISTANT),
        texts,
        message.get("create_time"),
        f"message {node_id} has a time",
    )
