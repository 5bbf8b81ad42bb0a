"""What "about this person or topic" means in text: the words, whole, in any case and script.

A forget request names a person or topic ("Eva", "Mark's divorce"). Text is about it when it holds
one of its phrases as whole words (so "Eva" finds "Eva's" and "EVA", never "evaluate" or "Evan"),
case folded for every script. The phrases are the request and, when the knowledge graph knows the
name, the entity's own name and its aliases ("Evie" for Eva). Word forms ("camped" for
"camping") are FTS5's job (finder.py), since only the index stems.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memdesk.core.text.words import split_words


def words_of(text: str) -> list[str]:
    return split_words(text.casefold())


class Phrases:
    """Whole-word, case-folded matching of a few phrases; also an SQL function (``register``)."""

    def __init__(self, phrases: Iterable[str]) -> None:
        cleaned: dict[str, None] = {}
        for phrase in phrases:
            words = words_of(phrase)
            if words:
                cleaned.setdefault(" ".join(words), None)
        self.phrases: tuple[str, ...] = tuple(cleaned)
        parts = [r"\W+".join(re.escape(w) for w in phrase.split()) for phrase in self.phrases]
        self._pattern = re.compile(r"(?<!\w)(?:" + "|".join(parts) + r")(?!\w)", re.UNICODE) if parts else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def matches(self, text: str | None) -> bool:
        if not text or self._pattern is None:
            return False
        return self._pattern.search(text.casefold()) is not None

    def sql_matches(self, text) -> int:
        return int(isinstance(text, str) and self.matches(text))

    def register(self, db, name: str = "memdesk_forget_match") -> str:
        """Make ``name(text)`` usable in this connection's SQL (1 when the text matches)."""
        db.create_function(name, 1, self.sql_matches)
        return name

    def fts_query(self) -> str:
        """An FTS5 expression: any of the phrases, each a quoted phrase of its words."""
        return " OR ".join('"' + phrase.replace('"', '""') + '"' for phrase in self.phrases)

    def without(self, text: str) -> str:
        """``text`` without its lines that match (in one-line text, such as a summary, its
        sentences): a block keeps what it says about everything else."""
        parts, joiner = _parts(text)
        return joiner.join(part for part in parts if not self.matches(part))

    def matching_parts(self, text: str | None) -> list[str]:
        """The lines (or sentences) ``without`` would remove."""
        if not self.matches(text):
            return []
        parts, _ = _parts(text or "")
        return [part for part in parts if self.matches(part)]


def _parts(text: str) -> tuple[list[str], str]:
    lines = text.split("\n")
    if len(lines) > 1:
        return lines, "\n"
    return re.split(r"(?<=[.!?])\s+", text), " "
