"""Importing an export into an agent's recall memory: resumable, idempotent, embedded in batches.

Each conversation is stored in one transaction, with the import's progress row: a kill loses at
most the conversation being written, and nothing half-imported stays behind. The progress row
(``history_imports``) says how far the export was read; an import of the same file that finds it
``running``, ``stopped`` or ``paused`` goes on from there (``HistoryImport.start``), a finished one
is done. A close or a crash leaves it ``running`` or ``stopped``, and the session goes on with it
when the agent opens again; one the person stopped (or that failed) is ``paused`` and waits for
them to resume it.
A conversation already imported adds only the messages it did not have (by the export's message
ids): importing the same export again adds nothing, a newer one only what is new.

The work is a generator of small steps (``steps``), so whoever runs it decides when to pause: the
terminal runs it through; the session runs it as background work, a few steps at a time, and a
message the person sends goes first (memdesk.session.history_jobs).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memdesk.core.base.clock import iso
from memdesk.core.memory.recall import INDEX_BATCH, ImportedMessage
from memdesk.core.memory.services import MemoryServices
from memdesk.core.transfer.history.model import Conversation
from memdesk.core.transfer.history.preview import Selection, Tally, account, replaced
from memdesk.core.transfer.history.reading import Export, fingerprint

RUNNING, STOPPED, PAUSED, DONE = "running", "stopped", "paused", "done"
#: Messages stored between two embedding batches.
EMBED_EVERY = INDEX_BATCH


@dataclass(frozen=True)
class ImportProgress:
    import_id: int
    status: str
    conversations_done: int  # entries of the export gone through
    conversations_total: int  # 0: not known yet
    messages_done: int
    messages_total: int
    conversations_added: int
    messages_added: int
    embedding_left: int  # stored, not yet embedded
    seconds_left: float | None

    @property
    def finished(self) -> bool:
        return self.status == DONE

    def describe(self) -> str:
        total = f"/{self.conversations_total:,}" if self.conversations_total else ""
        mtotal = f"/{self.messages_total:,}" if self.messages_total else ""
        left = f", about {_duration(self.seconds_left)} left" if self.seconds_left else ""
        return f"{self.conversations_done:,}{total} conversations, {self.messages_done:,}{mtotal} messages{left}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class HistoryImport:
    """One export into one agent. ``start`` finds the import of this file that is still going (or
    begins one); ``steps()`` does the work, yielding progress after each conversation."""

    def __init__(self, memory: MemoryServices, import_id: int, export: Export, selection: Selection) -> None:
        self.memory = memory
        self.id = import_id
        self.export = export
        self.selection = selection
        self.tally = Tally()
        self.embed_batch = EMBED_EVERY  # messages stored between two embedding steps
        self._row = self._read_row()

    # --- beginning, or going on ---------------------------------------------------------------
    @classmethod
    def start(
        cls,
        memory: MemoryServices,
        agent_id: int,
        path: Path,
        selection: Selection | None = None,
        *,
        totals: tuple[int, int] = (0, 0),
    ) -> HistoryImport:
        """An import of ``path`` into the agent: the one left unfinished for the same file and
        choice if there is one (it goes on where it stopped), else a new one. ``totals``: the
        conversations and messages a preview counted (for the time left)."""
        selection = selection or Selection()
        export = Export(path)
        db, now = memory.db, iso(memory.clock.now())
        mark = fingerprint(Path(path))
        chosen = json.dumps(selection.as_dict(), sort_keys=True)
        row = db.query_one(
            "SELECT id FROM history_imports WHERE agent_id = ? AND fingerprint = ? AND selection = ? AND status != ?"
            " ORDER BY id DESC LIMIT 1",
            (agent_id, mark, chosen, DONE),
        )
        with db.transaction():
            if row is not None:
                import_id = int(row[0])
                db.execute(
                    "UPDATE history_imports SET status = ?, path = ?, updated_at = ? WHERE id = ?",
                    (RUNNING, str(path), now, import_id),
                )
            else:
                import_id = int(
                    db.execute(
                        "INSERT INTO history_imports(agent_id, path, fingerprint, format, selection, status,"
                        " conversations_total, messages_total, started_at, updated_at)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (agent_id, str(path), mark, export.format, chosen, RUNNING, *totals, now, now),
                    ).lastrowid
                )
        return cls(memory, import_id, export, selection)

    @classmethod
    def unfinished(cls, memory: MemoryServices, agent_id: int) -> list[tuple[int, str]]:
        """Imports of the agent a close or a crash cut short (not those the person paused): (id, path)."""
        rows = memory.db.query(
            "SELECT id, path FROM history_imports WHERE agent_id = ? AND status IN (?, ?) ORDER BY id",
            (agent_id, RUNNING, STOPPED),
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    @classmethod
    def resume(cls, memory: MemoryServices, import_id: int) -> HistoryImport:
        """Go on with an unfinished import (its file must still be where it was, unchanged)."""
        from memdesk.core.base.errors import HistoryImportError

        row = memory.db.query_one(
            "SELECT agent_id, path, fingerprint, selection FROM history_imports WHERE id = ?", (import_id,)
        )
        if row is None:
            raise HistoryImportError(f"No import {import_id}")
        path = Path(row[1])
        if not path.exists() or fingerprint(path) != row[2]:
            raise HistoryImportError(
                f"{path} is no longer there as it was when its import began",
                hint="import it again: what came in before stays, nothing is added twice",
            )
        return cls.start(memory, int(row[0]), path, Selection.from_dict(json.loads(row[3])))

    def _read_row(self) -> dict:
        columns = (
            "agent_id, status, conversations_total, messages_total, conversations_done, messages_done,"
            " conversations_added, messages_added, skipped, seconds"
        )
        row = self.memory.db.query_one(f"SELECT {columns} FROM history_imports WHERE id = ?", (self.id,))
        return dict(zip([c.strip() for c in columns.split(",")], row, strict=True))

    @property
    def agent_id(self) -> int:
        return int(self._row["agent_id"])

    def stop(self) -> None:
        """Mark it stopped (the next start of the same file goes on from here)."""
        self._mark(STOPPED)

    def pause(self) -> None:
        """The person stopped it (or it failed): it goes on only when they resume it."""
        self._mark(PAUSED)

    def _mark(self, status: str) -> None:
        with self.memory.db.transaction():
            cursor = self.memory.db.execute(
                "UPDATE history_imports SET status = ?, updated_at = ? WHERE id = ? AND status = ?",
                (status, iso(self.memory.clock.now()), self.id, RUNNING),
            )
        if cursor.rowcount:
            self._row["status"] = status

    def progress(self) -> ImportProgress:
        """Where it is now (after ``steps`` ran, or stopped)."""
        return self._progress(time.monotonic(), 0)

    # --- the work -----------------------------------------------------------------------------
    def steps(self) -> Iterator[ImportProgress]:
        row, recall = self._row, self.memory.recall
        start_at = int(row["conversations_done"])
        started = time.monotonic()
        base_seconds = float(row["seconds"])
        done_here = 0
        pending = 0
        skipped = _loads(row["skipped"])
        self.tally.problems = [(str(p[0]), str(p[1])) for p in skipped.get("conversations", [])]
        self.tally.left_out.update(skipped.get("parts", {}))
        self.tally.unreadable = int(skipped.get("unreadable", len(self.tally.problems)))
        for entry in self.export.entries():
            if entry.index < start_at:
                continue  # done before a restart
            counted = Tally()
            chosen = account(counted, entry, self.selection, lambda c: 0)
            self.tally.problems += counted.problems
            self.tally.unreadable += counted.unreadable
            self.tally.left_out.update(counted.left_out)
            self.tally.stopped = counted.stopped or self.tally.stopped
            with self.memory.db.transaction():  # the conversation and the progress past it, together
                conversation = entry.conversation
                added = self._store(conversation) if chosen and conversation and conversation.messages else 0
                self._advance(entry.index + 1, conversation if chosen else None, added, started, base_seconds)
            pending += added
            done_here += 1
            if pending >= self.embed_batch:
                pending -= recall.index_pending(self.agent_id, limit=pending)
            yield self._progress(started, done_here)
            if entry.stopped:
                break
        replaced(self.tally, self.export)
        while recall.index_pending(self.agent_id, limit=self.embed_batch):
            yield self._progress(started, done_here)
        self._finish(started, base_seconds)
        yield self._progress(started, done_here)

    def run(self) -> ImportProgress:
        """All of it, here (the terminal)."""
        progress = None
        for progress in self.steps():  # noqa: B007 - the last one is the answer
            pass
        assert progress is not None
        return progress

    def _store(self, conversation: Conversation) -> int:
        """Store what is new of one conversation (the caller holds the transaction): how many messages."""
        db, agent_id = self.memory.db, self.agent_id
        now = iso(self.memory.clock.now())
        row = db.query_one(
            "SELECT id FROM imported_conversations WHERE agent_id = ? AND source = ? AND external_id = ?",
            (agent_id, conversation.source, conversation.external_id),
        )
        if row is None:
            conversation_id = int(
                db.execute(
                    "INSERT INTO imported_conversations(agent_id, source, external_id, title, assistant, started_at,"
                    " updated_at, skipped, import_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        agent_id,
                        conversation.source,
                        conversation.external_id,
                        conversation.title,
                        conversation.assistant,
                        iso(conversation.first_at) if conversation.first_at else None,
                        iso(conversation.last_at) if conversation.last_at else None,
                        json.dumps(sorted(conversation.left_out.items()), ensure_ascii=False),
                        self.id,
                        now,
                    ),
                ).lastrowid
            )
            there: set[str] = set()
        else:
            conversation_id = int(row[0])
            there = {
                r[0] for r in db.query("SELECT external_id FROM messages WHERE conversation_id = ?", (conversation_id,))
            }
        new = [m for m in conversation.messages if m.external_id not in there]
        if not new:
            return 0
        self.memory.recall.add_imported(
            agent_id,
            conversation_id,
            [ImportedMessage(m.role, m.text, m.at, m.author, m.external_id) for m in new],
            imported_at=self.memory.clock.now(),
        )
        db.execute(
            "UPDATE imported_conversations SET title = ?, updated_at = ?, message_count = message_count + ?"
            " WHERE id = ?",
            (
                conversation.title,
                iso(conversation.last_at) if conversation.last_at else None,
                len(new),
                conversation_id,
            ),
        )
        return len(new)

    def _advance(
        self, done: int, conversation: Conversation | None, added: int, started: float, base_seconds: float
    ) -> None:
        row = self._row
        row["conversations_done"] = done
        row["messages_done"] = int(row["messages_done"]) + (len(conversation.messages) if conversation else 0)
        row["conversations_added"] = int(row["conversations_added"]) + (1 if added > 0 else 0)
        row["messages_added"] = int(row["messages_added"]) + max(0, added)
        row["seconds"] = base_seconds + time.monotonic() - started
        self.memory.db.execute(
            "UPDATE history_imports SET conversations_done = ?, messages_done = ?, conversations_added = ?,"
            " messages_added = ?, skipped = ?, seconds = ?, updated_at = ? WHERE id = ?",
            (
                done,
                row["messages_done"],
                row["conversations_added"],
                row["messages_added"],
                self._skipped(),
                row["seconds"],
                iso(self.memory.clock.now()),
                self.id,
            ),
        )

    def _skipped(self) -> str:
        t = self.tally
        return json.dumps(
            {"conversations": t.problems, "unreadable": t.unreadable, "parts": dict(t.left_out), "stopped": t.stopped},
            ensure_ascii=False,
        )

    def _finish(self, started: float, base_seconds: float) -> None:
        now = iso(self.memory.clock.now())
        self._row["status"] = DONE
        with self.memory.db.transaction():
            self.memory.db.execute(
                "UPDATE history_imports SET status = ?, skipped = ?, seconds = ?, finished_at = ?, updated_at = ?"
                " WHERE id = ?",
                (DONE, self._skipped(), base_seconds + time.monotonic() - started, now, now, self.id),
            )

    def _progress(self, started: float, done_here: int) -> ImportProgress:
        row = self._row
        elapsed = time.monotonic() - started
        left = None
        share = self.export.progress()
        if done_here and 0 < share < 1 and elapsed > 1:
            left = elapsed * (1 - share) / share  # the file's share read in this run's time
        embedding = int(
            self.memory.db.scalar(
                "SELECT COUNT(*) FROM messages WHERE agent_id = ? AND embedded = 0 AND search_text != ''",
                (self.agent_id,),
            )
        )
        return ImportProgress(
            self.id,
            str(row["status"]),
            int(row["conversations_done"]),
            int(row["conversations_total"]),
            int(row["messages_done"]),
            int(row["messages_total"]),
            int(row["conversations_added"]),
            int(row["messages_added"]),
            embedding,
            left,
        )


def _loads(text: str | None) -> dict:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
