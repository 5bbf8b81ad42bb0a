"""Relations as the graph compares them.

Relations are free text ("lives in", "moved to", "works at"), written by the extractor, the model,
the agent or the user. Two facts contradict when they give a single-valued relation of the same
subject different objects: someone lives in one place at a time, but likes many things. The key
folds simple inflections and a few synonyms so "lives in", "live in" and "moved to" meet.
"""

from __future__ import annotations

import re

MAX_RELATION_CHARS = 40

_IRREGULAR = {
    "is": "be",
    "was": "be",
    "are": "be",
    "were": "be",
    "am": "be",
    "been": "be",
    "has": "have",
    "had": "have",
    "went": "go",
    "goes": "go",
    "made": "make",
    "got": "get",
    "left": "leave",
    "bought": "buy",
    "met": "meet",
    "married": "marry",
}
_SYNONYMS = {
    "move to": "live in",
    "relocate to": "live in",
    "reside in": "live in",
    "be from": "live in",
    "live at": "live in",
    "work for": "work at",
    "be employed at": "work at",
    "be employed by": "work at",
    "work in": "work at",
    "marry": "married to",
    "marry to": "married to",
    "be married to": "married to",
    "be marry to": "married to",
    "wed": "married to",
    "study in": "study at",
    "attend": "study at",
    "be called": "be named",
    "be name": "be named",
    "named": "be named",
}
#: A subject has one object for these at any time: a newer fact closes the older one.
SINGLE_VALUED = frozenset({"live in", "work at", "work as", "married to", "age", "study at", "be named"})


def clean_relation(relation: str) -> str:
    """The relation as stored: lower case, single spaces, no punctuation, bounded length."""
    text = re.sub(r"[^\w\s'-]", " ", relation.casefold())
    text = " ".join(text.replace("_", " ").split())
    return text[:MAX_RELATION_CHARS].strip()


def _base(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("ed") and len(word) > 4:
        stem = word[:-2]
        return (
            stem[:-1]
            if len(stem) > 2 and stem[-1] == stem[-2]
            else (stem + "e" if stem.endswith(("v", "r", "c", "at")) else stem)
        )
    return word


def relation_key(relation: str) -> str:
    words = clean_relation(relation).split()
    if not words:
        return ""
    key = " ".join([_base(words[0]), *words[1:]])
    return _SYNONYMS.get(key, key)


def single_valued(relation: str) -> bool:
    return relation_key(relation) in SINGLE_VALUED
