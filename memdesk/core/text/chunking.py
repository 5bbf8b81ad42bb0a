"""Split long text into passages of bounded size on paragraph or sentence boundaries.

Sizes are counted by a caller-supplied token counter; each chunk keeps its character offsets in
the source. Passages that will be embedded are cut by ``chunk_for_embedding``, with the embedder's
own tokenizer and window: a passage longer than the model reads would have its end never embedded
(all-MiniLM-L6-v2 reads 254 word pieces, and English prose runs 1.3 or more pieces a word).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n\s*\n")


@dataclass(frozen=True)
class Chunk:
    text: str
    start: int  # character offsets into the source text
    end: int


class TokenCounter(Protocol):
    """What chunking needs of an embedder (memdesk.core.embedding.Embedder has both)."""

    @property
    def max_tokens(self) -> int: ...

    def count_tokens(self, text: str) -> int: ...


def _word_count(text: str) -> int:
    return len(text.split())


def _pieces(text: str) -> list[tuple[int, int]]:
    """Sentence-or-paragraph spans covering the text (whitespace between them excluded)."""
    spans = []
    position = 0
    for match in _SENTENCE_END.finditer(text):
        if match.start() > position:
            spans.append((position, match.start()))
        position = match.end()
    if position < len(text):
        spans.append((position, len(text)))
    return spans


def chunk_text(
    text: str, *, max_tokens: int = 300, overlap_tokens: int = 0, count: Callable[[str], int] = _word_count
) -> list[Chunk]:
    if not text.strip():
        return []
    spans: list[tuple[int, int]] = []
    for start, end in _pieces(text):
        # A single sentence longer than a chunk is cut at word boundaries.
        if count(text[start:end]) <= max_tokens:
            spans.append((start, end))
            continue
        spans.extend(_split_long(text, start, end, max_tokens, count))
    chunks: list[Chunk] = []
    current: list[tuple[int, int]] = []
    size = 0
    for span in spans:
        span_size = count(text[span[0] : span[1]])
        if current and size + span_size > max_tokens:
            chunks.append(Chunk(text[current[0][0] : current[-1][1]], current[0][0], current[-1][1]))
            # Carry trailing sentences into the next chunk as overlap.
            carried: list[tuple[int, int]] = []
            carried_size = 0
            for previous in reversed(current):
                previous_size = count(text[previous[0] : previous[1]])
                if carried_size + previous_size > overlap_tokens:
                    break
                carried.insert(0, previous)
                carried_size += previous_size
            current, size = carried, carried_size
        current.append(span)
        size += span_size
    if current:
        chunks.append(Chunk(text[current[0][0] : current[-1][1]], current[0][0], current[-1][1]))
    return chunks


def _split_long(text: str, start: int, end: int, max_tokens: int, count: Callable[[str], int]) -> list[tuple[int, int]]:
    """Cut one over-long sentence at word boundaries into spans of at most ``max_tokens``. A word is
    at least one token, so ``max_tokens`` words is the most a span can hold; fewer are found by
    bisection (a few counts per span, not one per word)."""
    words = list(re.finditer(r"\S+", text[start:end]))
    spans = []
    i = 0
    while i < len(words):
        low, high = 1, min(max(1, max_tokens), len(words) - i)
        while low < high:  # the most words from i that still fit
            middle = (low + high + 1) // 2
            if count(text[start + words[i].start() : start + words[i + middle - 1].end()]) <= max_tokens:
                low = middle
            else:
                high = middle - 1
        spans.append((start + words[i].start(), start + words[i + low - 1].end()))
        i += low
    return spans


def chunk_for_embedding(text: str, embedder: TokenCounter, *, overlap_tokens: int = 0) -> list[Chunk]:
    """Passages the embedder reads whole: counted with its tokenizer, up to its window. Archival
    inserts and document ingestion both cut their text here."""
    return chunk_text(text, max_tokens=embedder.max_tokens, overlap_tokens=overlap_tokens, count=embedder.count_tokens)
