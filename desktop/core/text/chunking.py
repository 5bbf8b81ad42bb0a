"""Split long text into passages of bounded size on paragraph or sentence boundaries.

Sizes are counted by a caller-supplied token counter (the embedding model's tokenizer is the
honest choice; words are the default). Each chunk keeps its character offsets in the source.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n\s*\n")


@dataclass(frozen=True)
class Chunk:
    text: str
    start: int  # character offsets into the source text
    end: int


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
        words = list(re.finditer(r"\S+", text[start:end]))
        step = max(1, max_tokens)
        for i in range(0, len(words), step):
            group = words[i : i + step]
            spans.append((start + group[0].start(), start + group[-1].end()))
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
