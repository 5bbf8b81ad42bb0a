"""The memories event automatic recall places after a user message: its kind, its notes, how it
is written, how an expired one shows, and how people read it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from memdesk.core.memory.recall import Message

EVENT_KIND = "memories"
NOTE = "found automatically for the message above; they may not be relevant"
#: The note when none of them clears the support bar (memdesk.core.retrieval.support): said
#: plainly, so a model can answer "I don't remember that" instead of inventing an answer.
NOTHING_NOTE = (
    "found automatically for the message above; none of them clearly answers it: if it asks about the past,"
    " say you do not remember"
)
#: What an expired memories event shows the model (its memories are still in the store).
EXPIRED = json.dumps({"type": EVENT_KIND, "note": "expired; search your memory to see them again"})


def memories_text(lines: Sequence[str]) -> str:
    """How people read a memories event (the transcript, the CLI)."""
    return "Memories found automatically:\n" + "\n".join(f"- {line}" for line in lines)


def newest_event_id(messages: Sequence[Message], default: int) -> int:
    """The id of the newest memories event in ``messages`` (``default`` when there is none): at
    an eviction, every memories event older than it expires."""
    return max((m.id for m in messages if m.kind == EVENT_KIND), default=default)


def expired_view(messages: Sequence[Message], expired_before: int) -> list[Message]:
    """``messages`` as the model sees them: memories events older than ``expired_before`` are a
    stub (``EXPIRED``)."""
    return [replace(m, content=EXPIRED) if m.kind == EVENT_KIND and m.id < expired_before else m for m in messages]


def render_event(lines: Sequence[str], note: str = NOTE) -> str:
    return json.dumps({"type": EVENT_KIND, "note": note, "memories": list(lines)}, ensure_ascii=False)
