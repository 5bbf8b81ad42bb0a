"""Time, passed in rather than read from globals, so tests control it.

The store keeps UTC (``iso``); what the model and the user see is in the user's time zone: the
system's, or the ``time_zone`` setting. A clock's ``now()`` is in that zone, and the memory stores
hand out their times converted to it, so formatting a time anywhere shows local time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memdesk.core.base.errors import ConfigError


class Clock(Protocol):
    @property
    def zone(self) -> tzinfo:
        """The user's time zone."""

    def now(self) -> datetime:
        """The current time, aware, in ``zone``."""


def system_zone() -> tzinfo:
    """The operating system's zone: $TZ, else the /etc/localtime link, else the current offset."""
    name = os.environ.get("TZ", "").lstrip(":")
    candidates = [name] if name else []
    try:
        link = str(Path("/etc/localtime").resolve())
        if "zoneinfo/" in link:
            candidates.append(link.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    for candidate in candidates:
        try:
            return ZoneInfo(candidate)
        except (ZoneInfoNotFoundError, ValueError):
            continue
    return datetime.now().astimezone().tzinfo or UTC


def zone_named(name: str) -> tzinfo:
    """An IANA zone such as ``Europe/Lisbon``; empty means the system's."""
    name = name.strip()
    if not name:
        return system_zone()
    if name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise ConfigError(
            f"Unknown time zone {name!r}",
            hint="use a name such as Europe/Lisbon or America/New_York, or leave it empty",
        ) from error


class SystemClock:
    def __init__(self, zone: Callable[[], tzinfo] = system_zone) -> None:
        """``zone`` is asked each time, so a changed setting applies at once."""
        self._zone = zone

    @property
    def zone(self) -> tzinfo:
        return self._zone()

    def now(self) -> datetime:
        return datetime.now(self.zone)


class ManualClock:
    """A clock that moves only when told to (tests)."""

    def __init__(self, start: datetime | None = None, *, zone: tzinfo = UTC) -> None:
        self._now = start or datetime(2026, 11, 30, 9, 15, 2, tzinfo=UTC)
        self._zone = zone

    @property
    def zone(self) -> tzinfo:
        return self._zone

    def now(self) -> datetime:
        return self._now.astimezone(self._zone)

    def advance(self, **delta: float) -> None:
        self._now += timedelta(**delta)

    def set(self, moment: datetime) -> None:
        self._now = moment


def iso(moment: datetime) -> str:
    """Storage format: ISO 8601 in UTC, sortable as text."""
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def parse_iso(text: str, zone: tzinfo = UTC) -> datetime:
    """A stored time, shown in ``zone``."""
    moment = datetime.fromisoformat(text)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(zone)


#: English month names. strftime's %b/%B/%p follow LC_TIME, which Qt sets from the user's locale when
#: the window starts: the model's prompt (and what parses it back) must not change with it.
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def event_time(moment: datetime) -> str:
    """The time an event carries, in the moment's own zone: ``2026-11-30 09:15 WET``. Shorter than
    MemGPT's ``2026-11-30 09:15:02 AM WET+0000`` (17 tokens against 26 with the bundled model's
    tokenizer, each digit a token): every event is evaluated before the reply, and stays in context."""
    return moment.strftime("%Y-%m-%d %H:%M %Z")


def day_month_year(moment: datetime) -> str:
    """``8 May 2023``, whatever the locale."""
    return f"{moment.day} {MONTHS[moment.month - 1][:3]} {moment.year}"


def parse_month(name: str) -> int:
    """1-12 for an English month name or its first three letters (any case)."""
    key = name.strip().lower()[:3]
    for number, month in enumerate(MONTHS, start=1):
        if month.lower()[:3] == key:
            return number
    raise ValueError(f"not a month name: {name!r}")
