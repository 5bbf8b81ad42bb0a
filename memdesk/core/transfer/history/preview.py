"""What an import would bring, before anything is written: how many conversations and messages,
their dates, their titles, what is already there, what would be left out and why, and what the
agent's retention setting would do to them; and the person's choice of conversations by date or
title (``Preview.choose`` counts a new choice again without reading the file a second time)."""

from __future__ import annotations

import functools
import heapq
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from memdesk.core.base.clock import day_month_year
from memdesk.core.transfer.history.model import SOURCE_NAMES, Conversation
from memdesk.core.transfer.history.reading import Entry, Export

#: Titles a preview lists (the newest); the rest are counted.
LISTED_TITLES = 15
#: Conversations that could not be read, listed with their reasons; the rest are counted.
LISTED_PROBLEMS = 200


@dataclass(frozen=True)
class Selection:
    """Which conversations to import: those with a message between ``since`` and ``until`` (both
    inclusive, either open), whose title holds one of ``titles`` (any case; none: every title)."""

    since: date | None = None
    until: date | None = None
    titles: tuple[str, ...] = ()

    def chooses(self, conversation: Conversation) -> bool:
        return self.chooses_span(conversation.first_at, conversation.last_at, conversation.title)

    def chooses_span(self, first: datetime | None, last: datetime | None, title: str) -> bool:
        if self.since is not None and last is not None and last.date() < self.since:
            return False
        if self.until is not None and first is not None and first.date() > self.until:
            return False
        if self.titles:
            folded = title.casefold()
            return any(t.casefold() in folded for t in self.titles)
        return True

    @property
    def everything(self) -> bool:
        return self.since is None and self.until is None and not self.titles

    def as_dict(self) -> dict[str, Any]:
        return {
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
            "titles": list(self.titles),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Selection:
        return cls(
            date.fromisoformat(data["since"]) if data.get("since") else None,
            date.fromisoformat(data["until"]) if data.get("until") else None,
            tuple(str(t) for t in data.get("titles", [])),
        )


@dataclass
class Tally:
    """Counts over an export's entries, kept as they stream past (an import's report uses it too)."""

    conversations: int = 0  # read
    messages: int = 0
    chosen_conversations: int = 0
    chosen_messages: int = 0
    new_messages: int = 0  # chosen and not imported before
    known_conversations: int = 0  # chosen, every message imported before
    first: datetime | None = None
    last: datetime | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)  # (where, why) of unreadable ones
    unreadable: int = 0
    left_out: Counter[str] = field(default_factory=Counter)  # parts of read conversations, by reason
    stopped: str = ""  # why reading ended before the file did
    expiring: int = 0  # chosen messages older than the retention setting keeps (by their own dates)

    def problem(self, entry: Entry) -> None:
        self.unreadable += 0 if entry.stopped else 1
        if entry.stopped:
            self.stopped = entry.problem
        elif len(self.problems) < LISTED_PROBLEMS:
            self.problems.append((entry.where, entry.problem))

    def read(self, conversation: Conversation) -> None:
        self.conversations += 1
        self.messages += len(conversation.messages)
        self.left_out.update(conversation.left_out)
        for at in (conversation.first_at, conversation.last_at):
            if at is not None:
                self.first = at if self.first is None else min(self.first, at)
                self.last = at if self.last is None else max(self.last, at)

    def skipped_lines(self) -> list[str]:
        """What was left out and why, one line each (for people)."""
        lines = [f"{where}: {why}" for where, why in self.problems]
        if self.unreadable > len(self.problems):
            lines.append(f"and {self.unreadable - len(self.problems)} more conversations that could not be read")
        lines += [f"{count} × {why}" if count > 1 else why for why, count in sorted(self.left_out.items())]
        if self.stopped:
            lines.append(self.stopped)
        return lines


@dataclass(frozen=True)
class Row:
    """One readable conversation as a preview remembers it, to count another choice without
    reading the file again."""

    first: datetime | None
    last: datetime | None
    title: str
    messages: int
    known: int  # of them in memory already
    expiring: int  # of them older than retention keeps
    index: int  # in the export


@dataclass(frozen=True)
class RetentionNote:
    """The agent forgets conversation messages older than ``days``: imported messages count their
    days from their import (memdesk.core.memory.forget.retention), so they stay until ``until``."""

    days: int
    cutoff: datetime  # messages older than this are past retention by their own dates
    until: datetime  # imported today, they are forgotten from this day on


@dataclass
class Preview:
    path: str
    format: str
    tally: Tally
    selection: Selection
    titles: list[tuple[datetime | None, str, int]]  # the newest chosen: (last message, title, messages)
    note: str = ""  # about the whole export
    retention: RetentionNote | None = None
    rows: list[Row] | None = None  # every readable conversation (when asked for: ``keep_rows``)

    def choose(self, selection: Selection) -> Preview:
        """The same preview for another choice, counted from ``rows`` (the file is not read again)."""
        if self.rows is None:
            raise ValueError("this preview kept no rows")
        t = self.tally
        tally = Tally(
            conversations=t.conversations,
            messages=t.messages,
            first=t.first,
            last=t.last,
            problems=list(t.problems),
            unreadable=t.unreadable,
            left_out=Counter(t.left_out),
            stopped=t.stopped,
        )
        newest: list[tuple[float, int, str, int]] = []
        for row in self.rows:
            if selection.chooses_span(row.first, row.last, row.title):
                _count_chosen(tally, row.messages, row.known, row.expiring)
                _keep_newest(newest, row.last, row.index, row.title, row.messages)
        return Preview(
            self.path, self.format, tally, selection, _newest_titles(newest), self.note, self.retention, self.rows
        )

    @property
    def source_name(self) -> str:
        return SOURCE_NAMES.get(self.format, self.format)

    def as_dict(self) -> dict[str, Any]:
        t = self.tally
        return {
            "path": self.path,
            "format": self.format,
            "conversations": t.conversations,
            "messages": t.messages,
            "first": t.first.isoformat() if t.first else None,
            "last": t.last.isoformat() if t.last else None,
            "chosen": {"conversations": t.chosen_conversations, "messages": t.chosen_messages},
            "new_messages": t.new_messages,
            "already_imported_conversations": t.known_conversations,
            "selection": self.selection.as_dict(),
            "titles": [
                {"last": at.isoformat() if at else None, "title": ti, "messages": n} for at, ti, n in self.titles
            ],
            "skipped": self.tally.skipped_lines(),
            "note": self.note,
            "retention": None
            if self.retention is None
            else {
                "days": self.retention.days,
                "older_than_retention": t.expiring,
                "kept_until": self.retention.until.isoformat(),
            },
        }


def preview(
    export: Export,
    selection: Selection = Selection(),
    *,
    known: Callable[[Conversation], int] = lambda c: 0,
    progress: Callable[[float], None] | None = None,
    retention: tuple[int, datetime] | None = None,
    keep_rows: bool = False,
) -> Preview:
    """Read the whole export once (nothing is written). ``known(conversation)``: how many of its
    messages are in memory already. ``retention``: (days, now) when the agent forgets conversation
    messages older than ``days``. ``keep_rows``: remember every conversation, for ``choose``."""
    tally = Tally()
    note = None
    if retention is not None and retention[0] > 0:
        days, now = retention
        note = RetentionNote(days, now - timedelta(days=days), now + timedelta(days=days))
    newest: list[tuple[float, int, str, int]] = []
    rows: list[Row] | None = [] if keep_rows else None
    for entry in export.entries():
        conversation = entry.conversation
        expiring = _expiring(conversation, note)
        chosen = conversation is not None and selection.chooses(conversation)
        there = known(conversation) if conversation is not None and (chosen or rows is not None) else 0
        account(tally, entry, selection, functools.partial(_known, there), expiring=expiring)
        if chosen and conversation is not None:
            _keep_newest(newest, conversation.last_at, entry.index, conversation.title, len(conversation.messages))
        if conversation is not None and rows is not None:
            rows.append(
                Row(
                    conversation.first_at,
                    conversation.last_at,
                    conversation.title,
                    len(conversation.messages),
                    there,
                    expiring,
                    entry.index,
                )
            )
        if progress is not None and entry.index % 200 == 0:
            progress(export.progress())
    replaced(tally, export)
    return Preview(str(export.path), export.format, tally, selection, _newest_titles(newest), export.note, note, rows)


def _known(count: int, _conversation: Conversation) -> int:
    return count


def _expiring(conversation: Conversation | None, note: RetentionNote | None) -> int:
    if conversation is None or note is None:
        return 0
    return sum(1 for m in conversation.messages if m.at < note.cutoff)


def _keep_newest(newest: list, at: datetime | None, index: int, title: str, messages: int) -> None:
    item = (at.timestamp() if at else 0.0, index, title or "(untitled)", messages)
    if len(newest) < LISTED_TITLES:
        heapq.heappush(newest, item)
    else:
        heapq.heappushpop(newest, item)


def _newest_titles(newest: list[tuple[float, int, str, int]]) -> list[tuple[datetime | None, str, int]]:
    return [
        (datetime.fromtimestamp(stamp).astimezone() if stamp else None, title, n)
        for stamp, _i, title, n in sorted(newest, reverse=True)
    ]


def replaced(tally: Tally, export: Export) -> None:
    """Say how much of the text was not valid UTF-8 (and was replaced)."""
    if export.replaced:
        tally.left_out[f"{export.replaced} characters that were not valid UTF-8 were replaced"] += 1


def account(
    tally: Tally, entry: Entry, selection: Selection, known: Callable[[Conversation], int], *, expiring: int = 0
) -> bool:
    """Count one entry; whether it is chosen. ``expiring``: its messages older than retention keeps."""
    conversation = entry.conversation
    if conversation is None:
        tally.problem(entry)
        return False
    tally.read(conversation)
    if not selection.chooses(conversation):
        return False
    _count_chosen(tally, len(conversation.messages), known(conversation), expiring)
    return True


def _count_chosen(tally: Tally, messages: int, there: int, expiring: int) -> None:
    tally.chosen_conversations += 1
    tally.chosen_messages += messages
    tally.new_messages += messages - there
    if there and there == messages:
        tally.known_conversations += 1
    tally.expiring += expiring


def retention_warning(preview: Preview) -> str:
    """What the agent's retention setting means for this import ("" when it does not matter)."""
    note, t = preview.retention, preview.tally
    if note is None or not t.expiring:
        return ""
    return (
        f"Retention is on: this agent forgets conversation messages after {note.days} days, and"
        f" {t.expiring:,} of the {t.chosen_messages:,} messages chosen are older than that. Imported messages"
        f" count their {note.days} days from the day they are imported, so they stay searchable until"
        f" {day_month_year(note.until)}, then retention forgets them. What MemDesk learns from them meanwhile"
        " stays: the knowledge graph and what you accept into core memory. To keep them longer, change"
        " retention in Memory > Forget… before then."
    )


def describe(preview: Preview) -> Iterable[str]:
    """The preview for people, line by line."""
    t = preview.tally
    span = f", {day_month_year(t.first)} to {day_month_year(t.last)}" if t.first and t.last else ""
    counts = f"{t.conversations:,} conversations, {t.messages:,} messages"
    yield f"{preview.path}: a {preview.source_name} export: {counts}{span}"
    if preview.note:
        yield f"  note: {preview.note}"
    if not preview.selection.everything:
        yield f"  chosen: {t.chosen_conversations:,} conversations, {t.chosen_messages:,} messages"
    if t.known_conversations or t.new_messages < t.chosen_messages:
        yield f"  already in memory: {t.chosen_messages - t.new_messages:,} messages; new: {t.new_messages:,}"
    if preview.titles:
        yield "  newest conversations:"
        for at, title, n in preview.titles:
            yield f"    {at:%Y-%m-%d}  {title}  ({n} messages)" if at else f"    {title}  ({n} messages)"
        if t.chosen_conversations > len(preview.titles):
            yield f"    … and {t.chosen_conversations - len(preview.titles):,} more"
    skipped = t.skipped_lines()
    if skipped:
        yield "  left out:"
        yield from (f"    {line}" for line in skipped)
    warning = retention_warning(preview)
    if warning:
        yield f"  note: {warning}"
