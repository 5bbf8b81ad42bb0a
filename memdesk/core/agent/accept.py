"""Accepting what the user sent.

The user's message is saved in its own committed transaction the moment it is accepted (Enter in
the terminal, Send in the window), before anything the front end does next: cancelling and joining
a background turn (login, timed heartbeat), stopping a consolidation pass or the knowledge graph's
use of the model. Those can take seconds (a prompt batch, a tool), and a crash meanwhile must not
lose the line. The turn that answers it runs afterwards on the saved row
(``Agent.answer_user_message``), which never adds it a second time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from memdesk.core.agent import events
from memdesk.core.base.clock import Clock
from memdesk.core.memory.recall import Message, RecallMemory
from memdesk.core.storage import Database


class _Memory(Protocol):
    """What accepting needs of the agent's stores (loop.MemoryServices, which imports this module);
    read only, as the frozen bundle has them."""

    @property
    def db(self) -> Database: ...

    @property
    def recall(self) -> RecallMemory: ...

    @property
    def clock(self) -> Clock: ...


def accept_user_message(
    memory: _Memory, agent_id: int, text: str, *, before: Callable[[], None] | None = None
) -> Message:
    """Save ``text`` as the user's message to ``agent_id`` and commit it (a savepoint when the caller
    already holds a transaction). Safe from any thread: the store's own lock, or a connection of the
    caller's, serialises it with the agent's short step transactions; it never waits for a turn.
    ``before`` runs first in the same transaction (the agent's memory check, when the agent itself
    accepts on its own thread: a memory change made before the message is reported before it)."""
    now = memory.clock.now()
    with memory.db.transaction():
        if before is not None:
            before()
        return memory.recall.add(
            agent_id,
            role="user",
            kind="user_message",
            content=events.user_message(text, now),
            created_at=now,
            search_text=text,
        )
