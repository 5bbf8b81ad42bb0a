"""The one word tokenizer. A word is a run of letters, digits or underscores in any script
(Python's ``\\w``); a mark is any other character that is not a space. Searching, matching,
counting, the hashing embedder, token estimates and word diffs all cut text this way, so a word
found by one is the same word to the others."""

from __future__ import annotations

import re

WORD = re.compile(r"\w+")
_WORD_OR_MARK = re.compile(r"\w+|[^\w\s]")
_PIECE = re.compile(r"\s+|\w+|[^\w\s]")


def split_words(text: str) -> list[str]:
    """The words of ``text``, in order."""
    return WORD.findall(text)


def words_and_marks(text: str) -> list[str]:
    """Each word and each punctuation mark of ``text``, in order: a model's tokenizer rarely makes
    fewer tokens than these, so they count tokens where no tokenizer is at hand."""
    return _WORD_OR_MARK.findall(text)


def split_pieces(text: str) -> list[str]:
    """``text`` cut into words, marks and the spaces between them: joined, they give ``text`` back
    (a word diff shows what changed and keeps the rest as it was)."""
    return _PIECE.findall(text)
