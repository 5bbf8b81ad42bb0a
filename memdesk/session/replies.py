"""The rules about user messages that a front end's own thread applies, on its own connection:
saving what the user sent at once, which message is owed a reply, and whether one may be retried.

Each takes the memory the front end saves through (its connection, or a private chat's copy):
nothing here waits for the session's job thread, which may hold the model for seconds.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from memdesk.core.agent import unanswered
from memdesk.core.agent.accept import accept_user_message
from memdesk.core.memory.recall import Message
from memdesk.core.memory.services import MemoryServices
from memdesk.session.sent_before_open import SentBeforeOpen


class TriedMessages:
    """User messages this session already ran (or could not run) a turn for: one left without a
    reply has its Retry, and is not answered on its own when the agent reopens (settings applied,
    tools changed), which would undo the user's Stop. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids: set[int] = set()

    def add(self, message_id: int) -> None:
        with self._lock:
            self._ids.add(message_id)

    def __contains__(self, message_id: object) -> bool:
        with self._lock:
            return message_id in self._ids


@dataclass(frozen=True)
class OwedReply:
    """The newest user message without a reply, as the conversation opens."""

    message: Message
    #: The user stopped its reply (this session or an earlier one), or its turn failed this
    #: session: it waits for Retry. Otherwise the session answers it as the agent opens.
    waits_for_retry: bool


def owed_reply(memory: MemoryServices, agent_id: int, tried: TriedMessages) -> OwedReply | None:
    owed = unanswered.newest(memory.db, memory.recall, agent_id)
    if owed is None:
        return None
    return OwedReply(owed, owed.id in tried or unanswered.was_stopped(memory.db, owed.id))


def why_not_retry(memory: MemoryServices, agent_id: int, message_id: int) -> str | None:
    """None when ``message_id`` may be answered again; otherwise why not, in the user's words."""
    message = memory.recall.get(message_id)
    if message is None or message.agent_id != agent_id or message.kind != "user_message":
        return "That message is not in this conversation"
    if not unanswered.is_unanswered(memory.db, agent_id, message_id):
        return "That message has been answered since"
    return None


def accept_all(memory: MemoryServices, agent_id: int, texts: list[str]) -> list[Message]:
    """Save ``texts`` as user messages, oldest first, all or none."""
    with memory.db.transaction():  # all or none: a second start must not save one twice
        return [accept_user_message(memory, agent_id, text) for text in texts]


def deliver(memory: MemoryServices, agent_id: int, inbox: SentBeforeOpen) -> list[tuple[Message, str]]:
    """The messages sent before the window opened (or left on disk by a start that ended before it
    could save them), saved to the agent; deleted from disk only once all are in the store. A store
    that refuses them raises, and they stay on disk for the next start."""
    texts = inbox.texts()
    if not texts:
        return []
    messages = accept_all(memory, agent_id, texts)
    inbox.clear()
    return list(zip(messages, texts, strict=True))
