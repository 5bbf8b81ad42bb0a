"""What the model reads and what MemDesk parses back does not depend on the user's locale: Qt sets
LC_TIME from it when the window starts, and strftime's %p and %b (strptime's %B) follow LC_TIME."""

from __future__ import annotations

import locale
import subprocess
from datetime import UTC, datetime

from memdesk.core.base.clock import day_month_year, event_time
from memdesk.core.evaluation.locomo import session_time


def other_locales() -> list[str]:
    """Locales of this machine whose time names are not C's (many machines, CI among them, have none)."""
    try:
        listed = subprocess.run(["locale", "-a"], capture_output=True, text=True, timeout=10).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return []
    return [name for name in listed if name.split(".")[0] not in ("C", "POSIX")][:3]


def formats() -> tuple[str, str, datetime]:
    moment = datetime(2026, 11, 30, 21, 15, 2, tzinfo=UTC)
    return event_time(moment), day_month_year(moment), session_time("12:05 am on 8 May, 2023")


def test_times_are_written_and_read_in_english_under_every_locale_this_machine_has():
    expected = ("2026-11-30 21:15 UTC", "30 Nov 2026", datetime(2023, 5, 8, 0, 5, tzinfo=UTC))
    assert formats() == expected
    saved = locale.setlocale(locale.LC_TIME)
    try:
        for name in other_locales():
            locale.setlocale(locale.LC_TIME, name)
            assert formats() == expected, name
    finally:
        locale.setlocale(locale.LC_TIME, saved)


def test_locomo_session_times_parse_both_halves_of_the_day():
    assert session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert session_time("12:30 pm on 31 July, 2023") == datetime(2023, 7, 31, 12, 30, tzinfo=UTC)
    assert session_time(" 9:00 am on 1 January, 2024 ") == datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
