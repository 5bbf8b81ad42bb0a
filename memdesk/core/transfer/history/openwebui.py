"""Open WebUI's chat export (Settings > Chats > Export chats, ``chat-export-<time>.json``): an array
of its ``Chat`` rows ``{id, user_id, title, chat, created_at, updated_at, ...}`` whose ``chat`` holds
``history: {messages: {id: {id, parentId, childrenIds, role, content, timestamp, model}},
currentId}`` (the tree, as regenerations branch it) and a flat ``messages`` list. Times are POSIX
seconds. A single chat's download is one such ``chat`` (or row) on its own.

Read from Open WebUI's own code: backend/open_webui/models/chats.py (the Chat table and ChatModel)
and the chat object its front end keeps (history.messages keyed by id, currentId the leaf shown).
"""

from __future__ import annotations

from typing import Any

from memdesk.core.base.errors import ExportShapeError
from memdesk.core.transfer.history.model import OPEN_WEBUI, Conversation, Said
from memdesk.core.transfer.history.parsing import LOOP, begin, branch, finish, other_speaker, said

ASSISTANT = "Open WebUI"
IMAGES = "images and files are not imported"
BRANCHES = "messages on other branches (regenerated or edited) are not imported"


def _chat(value: Any) -> dict | None:
    if not isinstance(value, dict):
        return None
    chat: Any = value.get("chat") if isinstance(value.get("chat"), dict) else value
    history = chat.get("history")
    if isinstance(history, dict) and isinstance(history.get("messages"), dict):
        return chat
    if isinstance(chat.get("messages"), list) and ("models" in chat or "chat" in value):
        return chat
    return None


def looks_like(value: Any) -> bool:
    return _chat(value) is not None


def parse(value: Any) -> Conversation:
    chat: Any = _chat(value)
    if chat is None:
        raise ExportShapeError("an Open WebUI chat without its history of messages")
    models = chat.get("models") if isinstance(chat.get("models"), list) else []
    default_model = next((m for m in models if isinstance(m, str) and m), ASSISTANT)
    conversation = begin(
        OPEN_WEBUI,
        value.get("id") or chat.get("id"),
        value.get("title") or chat.get("title"),
        default_model,
        value.get("created_at") or chat.get("timestamp"),
        value.get("updated_at"),
        without_id="an Open WebUI chat without an id",
    )
    history: Any = chat.get("history") if isinstance(chat.get("history"), dict) else {}
    tree = history.get("messages") if isinstance(history.get("messages"), dict) else None
    if tree:
        path, looped = branch(tree, _leaf(tree, history.get("currentId")), "parentId")
        if looped:
            conversation.left_out[LOOP] += 1
        others = len(tree) - len(path)
        if others > 0:
            conversation.left_out[BRANCHES] += others
        messages = [tree[i] for i in path]
    else:
        messages = [m for m in chat.get("messages", []) if isinstance(m, dict)]
    return finish(conversation, [_said(m, index, default_model, conversation) for index, m in enumerate(messages)])


def _leaf(tree: dict, leaf: Any) -> Any:
    """The leaf shown last; without a usable ``currentId``, the newest leaf."""
    if not isinstance(leaf, str) or leaf not in tree:
        leaves = [k for k, m in tree.items() if isinstance(m, dict) and not m.get("childrenIds")]
        leaf = max(leaves, key=lambda k: _seconds(tree[k].get("timestamp")), default=None)
    return leaf


def _seconds(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _said(message: Any, index: int, default_model: str, conversation: Conversation) -> Said | None:
    if not isinstance(message, dict):
        raise ExportShapeError(f"message {index + 1} is not an object")
    role = message.get("role")
    if role not in ("user", "assistant"):
        other_speaker(conversation, role)
        return None
    content = message.get("content")
    texts = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):  # OpenAI-style parts: text, image_url
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                conversation.left_out[IMAGES] += 1
    for key in ("files", "images"):
        if isinstance(message.get(key), list) and message[key]:
            conversation.left_out[IMAGES] += len(message[key])
    model = message.get("modelName") or message.get("model") or default_model
    return said(
        str(message.get("id") or f"#{index}"),
        role,
        None if role == "user" else str(model),
        texts,
        message.get("timestamp"),
        f"message {index + 1} has a time",
    )
