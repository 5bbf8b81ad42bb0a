"""Time, passed in rather than read from globals, so tests control it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(timezone.utc)


class ManualClock:
    """A clock that moves only when told to (tests)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 11, 30, 9, 15, 2, tzinfo=timezone.utc)

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> None:
        self._now += timedelta(**delta)

    def set(self, moment: datetime) -> None:
        self._now = moment


def iso(moment: datetime) -> str:
    """Storage format: ISO 8601 in UTC, sortable as text."""
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def parse_iso(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def event_time(moment: datetime) -> str:
    """The format MemGPT events use: ``2026-11-30 09:15:02 AM UTC+0000``."""
    local = moment.astimezone(timezone.utc)
    return local.strftime("%Y-%m-%d %I:%M:%S %p UTC%z")
