"""Which of the user's messages have no reply yet, read from the store alone.

A turn can end before its reply: the window closed, the process was killed or crashed, the model
process stopped, the user pressed Stop. The message was saved the moment it was sent
(``accept.py``), so the store says what is owed: every ``user_message`` of an agent after the last
reply the agent gave, a ``send_message`` call that succeeded (its ``search_text`` is what it said,
as the transcript reads it). Everything else after the message does not count: background events
(login, heartbeats, memory updates, automatic recall's memories) and the agent's other calls
(searches, memory edits) are not an answer.

One turn answers them all: its prompt holds every one of them, so the front ends answer only the
newest (``newest``), and check again right before running that it is still unanswered
(``is_unanswered``), so a message queued twice (sent while the model loaded, then found on open)
is answered once.

Whether the user stopped a reply is in the store too (``stopped_replies``): a turn a close, a kill
or a crash ended is answered on the next start by itself (``owed_on_open``), but one the user stopped
is not, since that would undo the Stop; the front ends show it "not answered" with Retry instead,
after a restart as before it. A turn that answers the message again clears the mark, so a crash
during a Retry is answered on the next start like any other.
"""

from __future__ import annotations

from datetime import datetime

from memdesk.core.base.clock import iso
from memdesk.core.memory.recall import Message, RecallMemory
from memdesk.core.storage import Database


def last_reply_id(db: Database, agent_id: int) -> int:
    """The id of the agent's newest successful ``send_message`` call (0: it never replied)."""
    value = db.scalar(
        "SELECT MAX(id) FROM messages WHERE agent_id = ? AND kind = 'assistant_call' AND function_name = 'send_message'"
        " AND search_text IS NOT NULL AND search_text != ''",
        (agent_id,),
    )
    return int(value or 0)


def unanswered(db: Database, recall: RecallMemory, agent_id: int) -> list[Message]:
    """The user's messages after the agent's last reply, oldest first (empty: nothing is owed)."""
    ids = [
        row[0]
        for row in db.query(
            "SELECT id FROM messages WHERE agent_id = ? AND kind = 'user_message' AND id > ? ORDER BY id",
            (agent_id, last_reply_id(db, agent_id)),
        )
    ]
    return recall.get_many(ids)


def newest(db: Database, recall: RecallMemory, agent_id: int) -> Message | None:
    """The message a turn should answer now, or None."""
    owed = unanswered(db, recall, agent_id)
    return owed[-1] if owed else None


def reply_to(db: Database, recall: RecallMemory, agent_id: int, message_id: int) -> Message | None:
    """The agent's first reply after ``message_id`` (None: it has none yet)."""
    value = db.scalar(
        "SELECT MIN(id) FROM messages WHERE agent_id = ? AND id > ? AND kind = 'assistant_call'"
        " AND function_name = 'send_message'"
        " AND search_text IS NOT NULL AND search_text != ''",
        (agent_id, message_id),
    )
    return recall.get(int(value)) if value else None


def is_unanswered(db: Database, agent_id: int, message_id: int) -> bool:
    """Whether ``message_id`` still waits for a reply (False once any later reply exists)."""
    return last_reply_id(db, agent_id) < message_id


def mark_stopped(db: Database, message_id: int, at: datetime) -> None:
    """The user stopped the turn answering ``message_id``: no start answers it on its own."""
    db.execute(
        "INSERT INTO stopped_replies(message_id, stopped_at) VALUES (?, ?)"
        " ON CONFLICT(message_id) DO UPDATE SET stopped_at = excluded.stopped_at",
        (message_id, iso(at)),
    )


def clear_stopped(db: Database, message_id: int) -> None:
    """A turn answers ``message_id`` again (Retry, or a newer message's turn)."""
    db.execute("DELETE FROM stopped_replies WHERE message_id = ?", (message_id,))


def was_stopped(db: Database, message_id: int) -> bool:
    """Whether the user stopped the reply to ``message_id`` (and no turn answered it since)."""
    return db.scalar("SELECT 1 FROM stopped_replies WHERE message_id = ?", (message_id,)) is not None


def owed_on_open(db: Database, recall: RecallMemory, agent_id: int) -> Message | None:
    """The message a start answers by itself: the newest owed one, unless its reply was stopped
    (then it waits for the user's Retry or next message, and None is returned)."""
    owed = newest(db, recall, agent_id)
    return None if owed is None or was_stopped(db, owed.id) else owed
