"""Turning a natural-language query into what each retriever needs.

FTS5's default is AND of all terms, which almost never matches a whole question; BM25 wants the
content words OR-ed together and lets IDF do the weighting. Stop words are dropped because on
conversational text they match nearly every message and drown the terms that matter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, timedelta

from memdesk.core.text.words import split_words

#: Search words a query keeps (its first unique content words). Each one is an OR branch of the
#: FTS5 query, so a pasted 20,000-word text made one search take over a second on a tiny store;
#: a question, or a message automatic recall searches with, has far fewer.
MAX_QUERY_TERMS = 64

STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been before being below
    between both but by can cannot could did didn do does doesn doing don down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is isn it its itself
    just let me more most my myself no nor not now of off on once only or other ought our ours ourselves out
    over own same shan she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was wasn we were what when where which while who whom
    why will with won would you your yours yourself yourselves s t d ll m re ve also get got any kind
    """.split()
)


def terms(query: str) -> list[str]:
    """Content words of the query, lower-cased, first occurrence order, no duplicates; at most
    ``MAX_QUERY_TERMS`` of them."""
    return _first_unique(w for w in split_words(query.casefold()) if w not in STOP_WORDS)


def _first_unique(words) -> list[str]:
    seen: dict[str, None] = {}
    for word in words:
        if len(seen) == MAX_QUERY_TERMS:
            break
        seen.setdefault(word, None)
    return list(seen)


def fts_phrases(query: str) -> list[str]:
    """The query's content words as FTS5 phrases, each quoted so that words such as AND, NEAR or
    a stray ``*`` in user text are never read as operators."""
    words = terms(query)
    if not words:  # a query made only of stop words still deserves a lexical search
        words = _first_unique(split_words(query.casefold()))
    return ['"' + w.replace('"', '""') + '"' for w in words]


def fts_query(query: str) -> str:
    """An FTS5 MATCH expression OR-ing the query's content words (see ``fts_phrases``)."""
    return " OR ".join(fts_phrases(query))


#: A word as SQLite FTS5's unicode61 tokenizer cuts it: letters and digits, an underscore separates.
_TOKEN = re.compile(r"[^\W_]+")


def inner_words(query: str) -> list[str]:
    """The words of ``query`` that a text containing it verbatim must contain whole, as the FTS
    tokenizer cuts them: every word but one touching the query's start or end (which may be the
    end or the start of a longer word in the text)."""
    return _first_unique(m.group().casefold() for m in _TOKEN.finditer(query) if m.start() > 0 and m.end() < len(query))


def mentioned_names(query: str, names: list[str]) -> set[str]:
    """Which of ``names`` (speakers known to the store) the query mentions, as whole words."""
    words = set(split_words(query.casefold()))
    found = set()
    for name in names:
        parts = split_words(name.casefold())
        if parts and all(p in words for p in parts):
            found.add(name)
    return found


def without_words(query: str, phrases: list[str]) -> str:
    """``query`` without the words of these phrases (whole words, any case); "" when nothing but
    stop words is left, so the caller can fall back to the whole query."""
    drop = {w for phrase in phrases for w in split_words(phrase.casefold())}
    kept = [w for w in split_words(query) if w.casefold() not in drop]
    return " ".join(kept) if terms(" ".join(kept)) else ""


def meaning_text(query: str, speakers: Iterable[str]) -> str:
    """What the dense legs embed of ``query``: its words without the names of the conversation's
    ``speakers`` (a speaker's name is not a search word: it would draw the messages that name
    them, not what they said). The conversation's and the archival search embed this same
    text, so one search of both memories embeds its query once (the embedder keeps recent
    queries): with the whole query for the passages, every question naming a speaker, or with
    punctuation, was embedded twice."""
    names = mentioned_names(query, sorted(speakers))
    return without_words(query, sorted(names)) or query


def contains_casefold(haystack: str | None, needle: str | None) -> int:
    """SQL function ``memdesk_contains``: SQLite's LIKE folds ASCII only, and recall search
    promises case-insensitive matching in every script."""
    if not haystack or needle is None:
        return 0
    return int(needle.casefold() in haystack.casefold())


_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_DATE_PATTERNS = (  # (pattern, which groups are day, month, year)
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE), (1, 2, 3)),
    (re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE), (2, 1, 3)),
    (re.compile(rf"\b{_YEAR}-(\d\d)-(\d\d)\b"), (3, 2, 1)),
    (re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE), (None, 1, 2)),
)


def mentioned_dates(query: str) -> list[tuple[date, date]]:
    """Calendar dates the query names with their year ("on 31 July, 2023", "May 8th 2023",
    "2023-05-08", "in July 2023"), as inclusive (first, last) day ranges. A date without its year,
    or a year alone, is too vague to narrow a search and is ignored."""
    found: list[tuple[date, date]] = []
    taken: list[tuple[int, int]] = []
    for pattern, (day_group, month_group, year_group) in _DATE_PATTERNS:
        for match in pattern.finditer(query):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue  # "July 2023" inside "31 July, 2023" is the same date
            month_text, year = match.group(month_group), int(match.group(year_group))
            month = int(month_text) if month_text.isdigit() else _MONTHS[month_text.casefold()]
            try:
                if day_group is None:
                    first = date(year, month, 1)
                    last = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
                else:
                    first = last = date(year, month, int(match.group(day_group)))
            except ValueError:  # "31 February"
                continue
            taken.append(match.span())
            found.append((first, last))
    return found
