"""What an import would bring, before anything is written: how many conversations and messages,
their dates, their titles, what is already there, and what would be left out and why; and the
person's choice of conversations by date or title."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
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
        first, last = conversation.first_at, conversation.last_at
        if self.since is not None and last is not None and last.date() < self.since:
            return False
        if self.until is not None and first is not None and first.date() > self.until:
            return False
        if self.titles:
            title = conversation.title.casefold()
            return any(t.casefold() in title for t in self.titles)
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


@dataclass
class Preview:
    path: str
    format: str
    tally: Tally
    selection: Selection
    titles: list[tuple[datetime | None, str, int]]  # the newest chosen: (last message, title, messages)
    note: str = ""  # about the whole export

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
        }


def preview(
    export: Export,
    selection: Selection = Selection(),
    *,
    known: Callable[[Conversation], int] = lambda c: 0,
    progress: Callable[[float], None] | None = None,
) -> Preview:
    """Read the whole export once (nothing is written). ``known(conversation)``: how many of its
    messages are in memory already."""
    tally = Tally()
    newest: list[tuple[float, int, str, int]] = []
    for entry in export.entries():
        account(tally, entry, selection, known)
        conversation = entry.conversation
        if conversation is not None and selection.chooses(conversation):
            at = conversation.last_at
            item = (
                at.timestamp() if at else 0.0,
                entry.index,
                conversation.title or "(untitled)",
                len(conversation.messages),
            )
            if len(newest) < LISTED_TITLES:
                heapq.heappush(newest, item)
            else:
                heapq.heappushpop(newest, item)
        if progress is not None and entry.index % 200 == 0:
            progress(export.progress())
    replaced(tally, export)
    titles = [
        (datetime.fromtimestamp(stamp).astimezone() if stamp else None, title, n)
        for stamp, _i, title, n in sorted(newest, reverse=True)
    ]
    return Preview(str(export.path), export.format, tally, selection, titles, export.note)


def replaced(tally: Tally, export: Export) -> None:
    """Say how much of the text was not valid UTF-8 (and was replaced)."""
    if export.replaced:
        tally.left_out[f"{export.replaced} characters that were not valid UTF-8 were replaced"] += 1


def account(tally: Tally, entry: Entry, selection: Selection, known: Callable[[Conversation], int]) -> bool:
    """Count one entry; whether it is chosen."""
    conversation = entry.conversation
    if conversation is None:
        tally.problem(entry)
        return False
    tally.read(conversation)
    if not selection.chooses(conversation):
        return False
    tally.chosen_conversations += 1
    tally.chosen_messages += len(conversation.messages)
    there = known(conversation)
    tally.new_messages += len(conversation.messages) - there
    if there and there == len(conversation.messages):
        tally.known_conversations += 1
    return True


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
