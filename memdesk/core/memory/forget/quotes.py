"""Newer rows that quote messages retention removes: they would keep the text alive.

Automatic recall places old messages in a ``memories`` event (and records each in
``recall_shown``), and a conversation search's result lists the messages it found; both are newer
than what they quote, so a retention cutoff leaves them, and each recall renews them. Retention
blanks what they quote as forget does: the quoted text becomes ``[forgotten]`` where it stood
(a memories line, a result line), the rest of the event or result is kept, and the
``recall_shown`` rows of the removed messages go.

A quote is found where the stored formats put one: after "] " (``[8 May 2023, you] text``) or
": " (``you: text``, ``- [2024-05-01 10:00] user: text``), running to the end of its line, or,
cut short to fit the recall budget, a line that starts with the quote's first ``PREFIX``
characters. A short message ("ok") is only ever a whole line's quote, never a word inside another.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memdesk.core.memory.erase import rewrite_messages
from memdesk.core.memory.forget.remove import PLACEHOLDER
from memdesk.core.storage import Database

#: How much of a quote a line cut short by the recall budget must still hold.
PREFIX = 24
#: Newer messages that can quote older ones: automatic recall's events and function results.
QUOTING_KINDS = ("memories", "function_result")
_BATCH = 500


@dataclass(frozen=True)
class Quotes:
    """What a retention run would blank: message id -> its new content; recall_shown rows."""

    contents: dict[int, str]
    shown: list[int]

    @property
    def count(self) -> int:
        return len(self.contents) + len(self.shown)


def _pattern(texts: Iterable[str]) -> re.Pattern[str] | None:
    whole, cut = [], []
    for text in {t.strip() for t in texts if t and t.strip()}:
        whole.append(re.escape(text) + r"(?=\n|$)")
        if len(text) > PREFIX:
            cut.append(re.escape(text[:PREFIX]) + r"[^\n]*")
    parts = sorted(whole, key=len, reverse=True) + sorted(cut, key=len, reverse=True)
    return re.compile(r"(?<=[\]:] )(?:" + "|".join(parts) + ")") if parts else None


def _unquoted(value: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(value, dict):
        return {k: _unquoted(v, pattern) for k, v in value.items()}
    if isinstance(value, list):
        return [_unquoted(v, pattern) for v in value]
    if isinstance(value, str):
        return pattern.sub(PLACEHOLDER, value)
    return value


def find_quotes(db: Database, agent_id: int, expired: list[int]) -> Quotes:
    """The newer rows of ``agent_id`` that quote the ``expired`` messages."""
    if not expired:
        return Quotes({}, [])
    texts: list[str] = []
    refs: list[str] = []
    for start in range(0, len(expired), _BATCH):
        ids = expired[start : start + _BATCH]
        marks = ",".join("?" * len(ids))
        texts += [r[0] for r in db.query(f"SELECT search_text FROM messages WHERE id IN ({marks})", ids)]
        refs += [f"message:{i}" for i in ids]
    shown: list[int] = []
    for start in range(0, len(refs), _BATCH):
        some = refs[start : start + _BATCH]
        rows = db.query(
            f"SELECT id, text FROM recall_shown WHERE agent_id = ? AND ref IN ({','.join('?' * len(some))})",
            (agent_id, *some),
        )
        shown += [int(r[0]) for r in rows]
        texts += [r[1] for r in rows]  # as recall showed it
    pattern = _pattern(texts)
    if pattern is None:
        return Quotes({}, shown)
    gone = set(expired)
    contents: dict[int, str] = {}
    kinds = ",".join("?" * len(QUOTING_KINDS))
    cursor = db.execute(
        f"SELECT id, content FROM messages WHERE agent_id = ? AND kind IN ({kinds})", (agent_id, *QUOTING_KINDS)
    )
    while rows := cursor.fetchmany(_BATCH):
        for message_id, content in rows:
            if message_id in gone:
                continue
            try:
                data = json.loads(content)
            except (json.JSONDecodeError, TypeError):
                continue
            blanked = _unquoted(data, pattern)
            if blanked != data:
                contents[int(message_id)] = json.dumps(blanked, ensure_ascii=False)
    return Quotes(contents, shown)


def blank_quotes(db: Database, quotes: Quotes) -> None:
    """Blank what ``quotes`` found (inside the caller's transaction)."""
    ids = sorted(quotes.contents)
    for start in range(0, len(ids), _BATCH):
        chunk = ids[start : start + _BATCH]
        marks = ",".join("?" * len(chunk))
        rows = db.query(f"SELECT id, search_text, author FROM messages WHERE id IN ({marks})", chunk)
        rewrite_messages(db, [(int(r[0]), quotes.contents[int(r[0])], r[1], r[2]) for r in rows])
    for start in range(0, len(quotes.shown), _BATCH):
        chunk = quotes.shown[start : start + _BATCH]
        db.execute(f"DELETE FROM recall_shown WHERE id IN ({','.join('?' * len(chunk))})", chunk)
