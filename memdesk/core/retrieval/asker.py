"""A question about oneself ("how many commits have I merged?", "what is my deadline?") is
answered by what the asker said: the person's own messages come first among the matches.

Automatic recall searches with the user's message, so "I" and "my" there are the user; the agent's
replies hold advice about the user's things, the user's messages the things themselves (their
numbers, plans, preferences, instructions). Measured on BEAM's development chats (each question a
user asks about their own project; docs/evaluation.md): recall@10 0.580 -> see ASKER_BOOST.
A question that names a speaker ("what did Ana say?") is left to the speaker boost instead.
"""

from __future__ import annotations

import re

import numpy as np

#: Added to the asker's matching messages, as a share of the best score (reorders matches, adds none).
ASKER_BOOST = 0.3
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll)\b", re.IGNORECASE)


def about_oneself(query: str) -> bool:
    return _FIRST_PERSON.search(query.replace("’", "'")) is not None


def asker_boost(scores: np.ndarray, authors: np.ndarray, asker: str, query: str) -> np.ndarray:
    """``scores`` with the asker's matching messages (``authors == asker``: the user's name, or ""
    for the user's own messages when no name is set) lifted, when the query is about oneself."""
    if not scores.size or not about_oneself(query):
        return scores
    top = float(scores.max())
    if top <= 0:
        return scores
    return scores + ASKER_BOOST * top * ((authors == asker) & (scores > 0))
