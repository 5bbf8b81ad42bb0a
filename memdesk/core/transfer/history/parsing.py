"""What the export parsers (ChatGPT, Claude, Open WebUI) share: a conversation's header, the walk
along the branch it ended on, and one message built from its parts of text. Each format reads its
own fields and hands them here, so the three cannot drift apart in what they keep or refuse."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from memdesk.core.base.errors import ExportShapeError
from memdesk.core.transfer.history.model import Conversation, Said, in_order, text_of, timestamp

LOOP = "a loop in the message tree was cut"


def begin(
    source: str, external_id: Any, title: Any, assistant: str, started: Any, updated: Any, *, without_id: str
) -> Conversation:
    """A conversation with no messages yet; ``without_id`` is the error when the export gives it
    no id (a conversation is known again on a later import by its id)."""
    conversation = Conversation(
        source,
        str(external_id or ""),
        text_of(title).strip(),
        assistant,
        [],
        timestamp(started, "a start time"),
        timestamp(updated, "an update time"),
    )
    if not conversation.external_id:
        raise ExportShapeError(without_id)
    return conversation


def finish(conversation: Conversation, found: Iterable[Said | None]) -> Conversation:
    """The conversation with the messages found, in order, times filled in where one was missing."""
    conversation.messages = in_order([m for m in found if m is not None], conversation.started_at)
    return conversation


def branch(nodes: Mapping[Any, Any], leaf: Any, parent: str) -> tuple[list[str], bool]:
    """The node ids from the root down to ``leaf``, following each node's ``parent`` link, and
    whether a link led back into the path (a loop): the walk ends there, and what was walked is
    the branch."""
    path: list[str] = []
    seen: set[str] = set()
    node_id = leaf
    while isinstance(node_id, str) and node_id in nodes:
        if node_id in seen:
            path.reverse()
            return path, True
        seen.add(node_id)
        path.append(node_id)
        node = nodes[node_id]
        node_id = node.get(parent) if isinstance(node, dict) else None
    path.reverse()
    return path, False


def other_speaker(conversation: Conversation, who: Any) -> None:
    """Counts a message from neither the person nor the assistant (a system or a tool)."""
    conversation.left_out[f"messages from a {str(who)[:20]!r} are not imported"] += 1


def said(external_id: str, role: str, author: str | None, texts: Iterable[str], at: Any, what: str) -> Said | None:
    """One message from its parts of text (blank parts dropped); None when no words are left.
    ``what`` names the message in the error when ``at`` is there but is no time."""
    text = "\n".join(t for t in texts if t.strip()).strip()
    if not text:
        return None
    # A message without a time takes the one before it (``finish``).
    return Said(external_id, role, author, text, timestamp(at, what))  # type: ignore[arg-type]
