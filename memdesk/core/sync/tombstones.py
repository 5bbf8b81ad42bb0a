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
        originals = split_words(text)
        words = [word.casefold() for word in originals]
        found = []
        for length, digests in self._by_length.items():
            for start in range(len(words) - length + 1):
                if (digest(self._key, words[start : start + length]), agent_uid) in digests:
                    found.append(" ".join(originals[start : start + length]))
        return found


def mentioned_before_sending(db: Database, forgotten: Tombstones) -> list[tuple[int, str]]:
    """(agent, words) for every change about to be sent that names a forgotten term: written here
    after the forget, it is forgotten here too before it leaves, as every other device would
    forget it on arrival; so every device ends with the same memory and the name on none."""
    if not forgotten:
        return []
    rows = db.query(
        "SELECT m.agent_id, a.uid, m.search_text || ' ' || m.content FROM sync_outbox o JOIN messages m"
        " ON m.uid = o.key JOIN agents a ON a.id = m.agent_id WHERE o.kind = 'messages'"
        " UNION ALL SELECT p.agent_id, a.uid, p.text FROM sync_outbox o JOIN passages p ON p.uid = o.key"
        " JOIN agents a ON a.id = p.agent_id WHERE o.kind = 'passages'"
        " UNION ALL SELECT b.agent_id, a.uid, b.value FROM sync_outbox o JOIN agents a"
        " ON o.key = a.uid || '/' || substr(o.key, length(a.uid) + 2) JOIN memory_blocks b"
        " ON b.agent_id = a.id AND b.label = substr(o.key, length(a.uid) + 2) WHERE o.kind = 'memory_blocks'"
    )
    found: dict[tuple[int, str], None] = {}
    for agent_id, agent_uid, text in rows:
        for term in forgotten.found_in(agent_uid, text):
            found[(int(agent_id), term)] = None
    return list(found)


def _mentions(text: str, words: list[str]) -> bool:
    found = normalized(text)
    return any(found[i : i + len(words)] == words for i in range(len(found) - len(words) + 1))


def scrub(db: Database, agent_id: int, text: str) -> None:
    """Take a forgotten term out of sync's own copies of block text: every version's lines that
    name it (each device removes the same lines, so the versions stay alike everywhere) and the
    conflicts that showed it."""
    words = normalized(text)
    if not words:
        return
    for edit_id, value in db.query(
        "SELECT edit_id, value FROM sync_block_versions WHERE agent_id = ? AND value IS NOT NULL", (agent_id,)
    ):
        if _mentions(value, words):
            db.execute("UPDATE sync_block_versions SET value = ? WHERE edit_id = ?", (_without(value, words), edit_id))
    for conflict_id, ours, theirs, merged in db.query(
        "SELECT id, ours, theirs, merged FROM sync_conflicts WHERE agent_id = ?", (agent_id,)
    ):
        if any(_mentions(part, words) for part in (ours, theirs, merged)):
            db.execute("DELETE FROM sync_conflicts WHERE id = ?", (conflict_id,))


def without(value: str, text: str) -> str:
    """A block's text without the lines that name a forgotten term."""
    words = normalized(text)
    return _without(value, words) if words else value


def _without(value: str, words: list[str]) -> str:
    return "\n".join(line for line in value.split("\n") if not _mentions(line, words))
