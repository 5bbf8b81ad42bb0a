"""What every export format is read into: a conversation of messages with their original times,
speakers and ids, and what was left out of it and why."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memdesk.core.base.errors import ExportShapeError

CHATGPT, CLAUDE, OPEN_WEBUI, TRANSCRIPT = "chatgpt", "claude", "open-webui", "transcript"
#: How each source is named to people ("What MemDesk learned from your ChatGPT history").
SOURCE_NAMES = {CHATGPT: "ChatGPT", CLAUDE: "Claude", OPEN_WEBUI: "Open WebUI", TRANSCRIPT: "transcripts"}
#: The earliest and latest time a message may carry (a timestamp outside is a damaged one).
EARLIEST = datetime(1990, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Said:
    """One message: the person's (``role`` user, ``author`` None unless the export names them) or
    the other assistant's (``author``: its name)."""

    external_id: str
    role: str
    author: str | None
    text: str
    at: datetime


@dataclass
class Conversation:
    source: str
    external_id: str
    title: str
    assistant: str
    messages: list[Said]
    started_at: datetime | None = None
    updated_at: datetime | None = None
    #: Parts of it left out, counted by reason ("images are not imported": 2).
    left_out: Counter[str] = field(default_factory=Counter)

    @property
    def first_at(self) -> datetime | None:
        return self.messages[0].at if self.messages else self.started_at

    @property
    def last_at(self) -> datetime | None:
        return self.messages[-1].at if self.messages else self.updated_at


def timestamp(value, what: str = "a time") -> datetime | None:
    """A POSIX time (seconds, or milliseconds as some tools write) or an ISO 8601 text; None when
    absent; ExportShapeError when it is there but no time."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, int | float):
            seconds = float(value)
            if seconds > 1e11:  # milliseconds
                seconds /= 1000
            at = datetime.fromtimestamp(seconds, UTC)
        elif isinstance(value, str):
            at = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            if at.tzinfo is None:
                at = at.replace(tzinfo=UTC)
        else:
            raise TypeError
    except (TypeError, ValueError, OverflowError, OSError):
        raise ExportShapeError(f"{what} that is not a time ({str(value)[:40]!r})") from None
    if not EARLIEST <= at <= LATEST:
        raise ExportShapeError(f"{what} out of range ({at:%Y-%m-%d})")
    return at.astimezone(UTC)


def text_of(value) -> str:
    return value if isinstance(value, str) else ""


def in_order(messages: list[Said], fallback: datetime | None) -> list[Said]:
    """Messages without a time of their own take the one before (or the conversation's start), so
    times never run backwards within a conversation: recall orders and dates by them."""
    out: list[Said] = []
    last = fallback
    for m in messages:
        at = m.at if m.at is not None else last
        if at is None:
            raise ExportShapeError("no time on its messages or on the conversation")
        out.append(Said(m.external_id, m.role, m.author, m.text, at))
        last = at
    return out
