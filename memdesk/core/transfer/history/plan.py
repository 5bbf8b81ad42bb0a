"""An import as a front end starts it: the preview first (nothing written), then, when the person
applies it, the import itself (memdesk.core.transfer.history.importer), and its report."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdesk.core.memory.services import MemoryServices
from memdesk.core.storage import Database
from memdesk.core.transfer.history.importer import HistoryImport
from memdesk.core.transfer.history.model import Conversation
from memdesk.core.transfer.history.preview import Preview, Selection, preview
from memdesk.core.transfer.history.reading import Export


def known_messages(db: Database, agent_id: int) -> Callable[[Conversation], int]:
    """How many of a conversation's messages the agent's memory holds already."""

    def known(conversation: Conversation) -> int:
        row = db.query_one(
            "SELECT id FROM imported_conversations WHERE agent_id = ? AND source = ? AND external_id = ?",
            (agent_id, conversation.source, conversation.external_id),
        )
        if row is None:
            return 0
        there = {r[0] for r in db.query("SELECT external_id FROM messages WHERE conversation_id = ?", (row[0],))}
        return sum(1 for m in conversation.messages if m.external_id in there)

    return known


@dataclass
class HistoryWork:
    preview: Preview
    job: HistoryImport | None = None  # None: a preview only

    def report(self) -> dict[str, Any]:
        """What the import did (after ``job.steps()`` ran through)."""
        assert self.job is not None
        row = self.job.memory.db.query_one(
            "SELECT conversations_added, messages_added, conversations_done, seconds FROM history_imports WHERE id = ?",
            (self.job.id,),
        )
        return {
            "import_id": self.job.id,
            "conversations_added": int(row[0]),
            "messages_added": int(row[1]),
            "conversations_read": int(row[2]),
            "seconds": round(float(row[3]), 1),
            "skipped": self.job.tally.skipped_lines(),
        }


def prepare(
    memory: MemoryServices,
    agent_id: int,
    path: Path,
    selection: Selection | None = None,
    *,
    apply: bool,
    progress: Callable[[float], None] | None = None,
    before_apply: Callable[[], Any] | None = None,
    retention_days: int = 0,
    keep_rows: bool = False,
) -> HistoryWork:
    """Preview ``path`` for the agent; with ``apply``, also begin (or go on with) its import,
    after ``before_apply`` (the composition root's snapshot). ``retention_days``: the agent's
    retention setting (0: off), which the preview weighs the messages' dates against.
    ``keep_rows``: the preview keeps every conversation, so another choice is counted without
    reading the file again (``Preview.choose``)."""
    path = Path(path)
    selection = selection or Selection()
    seen = preview(
        Export(path),
        selection,
        known=known_messages(memory.db, agent_id),
        progress=progress,
        retention=(retention_days, memory.clock.now()) if retention_days > 0 else None,
        keep_rows=keep_rows,
    )
    work = HistoryWork(seen)
    if apply:
        if before_apply is not None:
            before_apply()
        totals = (seen.tally.conversations + seen.tally.unreadable, seen.tally.chosen_messages)
        work.job = HistoryImport.start(memory, agent_id, path, selection, totals=totals)
    return work


def imports(db: Database, agent_id: int, limit: int = 20) -> list[dict[str, Any]]:
    """The agent's imports, newest first, as a list shows them."""
    rows = db.query(
        "SELECT id, path, format, status, conversations_added, messages_added, skipped, started_at, finished_at"
        " FROM history_imports WHERE agent_id = ? ORDER BY id DESC LIMIT ?",
        (agent_id, limit),
    )
    keys = (
        "id",
        "path",
        "format",
        "status",
        "conversations_added",
        "messages_added",
        "skipped",
        "started_at",
        "finished_at",
    )
    found = [dict(zip(keys, r, strict=True)) for r in rows]
    for item in found:
        item["skipped"] = json.loads(item["skipped"] or "{}")
    return found
