"""Forgetting across devices: a forget is a tombstone that wins over every edit, whatever order
changes arrive in.

A device keeps a forgotten term only as a keyed digest of its words (HMAC with the group's key),
never as text: a change that arrives later and mentions it (a message written on a device that had
not heard of the forget yet) is recognised by the digest of its words and forgotten on arrival.
"""

from __future__ import annotations

import hashlib
import hmac

from memdesk.core.storage import Database
from memdesk.core.text.words import split_words


def normalized(text: str) -> list[str]:
    return [word.casefold() for word in split_words(text)]


def digest(group_key: bytes, words: list[str]) -> str:
    return hmac.new(group_key, " ".join(words).encode(), hashlib.sha256).hexdigest()


def remember(db: Database, group_key: bytes, agent_uid: str, text: str) -> None:
    words = normalized(text)
    if words:
        db.execute(
            "INSERT OR IGNORE INTO sync_tombstones(digest, words, agent_uid) VALUES (?, ?, ?)",
            (digest(group_key, words), len(words), agent_uid),
        )


class Tombstones:
    """The forgotten terms of one store, loaded once per applied file."""

    def __init__(self, db: Database, group_key: bytes) -> None:
        self._key = group_key
        self._by_length: dict[int, set[tuple[str, str]]] = {}
        for value, words, agent_uid in db.query("SELECT digest, words, agent_uid FROM sync_tombstones"):
            self._by_length.setdefault(int(words), set()).add((value, agent_uid))

    def __bool__(self) -> bool:
        return bool(self._by_length)

    def found_in(self, agent_uid: str, text: str) -> list[str]:
        """The forgotten terms ``text`` mentions, as its own words (what to forget again)."""
        if not self._by_length or not text:
            return []
        words = normalized(text)
        found = []
        for length, digests in self._by_length.items():
            for start in range(len(words) - length + 1):
                window = words[start : start + length]
                if (digest(self._key, window), agent_uid) in digests:
                    found.append(" ".join(window))
        return found
