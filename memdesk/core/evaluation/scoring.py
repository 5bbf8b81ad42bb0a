"""LoCoMo's answer scoring: token F1 after their normalisation, with their per-category rules.

Normalisation (as in LoCoMo's scorer): drop commas, lowercase, strip punctuation, drop the words
"a", "an", "the" and "and", collapse whitespace. Category rules: multi-hop (1) answers are lists,
so each comma-separated gold part takes its best F1 against the comma-separated parts of the reply
and the parts are averaged; open-domain (3) gold answers keep only what precedes the first ";";
adversarial (5) questions have no answer, and a reply scores 1 when it says so ("no information
available" or "not mentioned"). LoCoMo also Porter-stems tokens (with NLTK); we do not, so a reply
that differs from the gold answer only by inflection scores lower here than there.
"""

from __future__ import annotations

import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = set(string.punctuation)
ABSTAINING = ("no information available", "not mentioned")


def normalize(text: str) -> str:
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, gold: str) -> float:
    predicted = normalize(prediction).split()
    expected = normalize(gold).split()
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision = same / len(predicted)
    recall = same / len(expected)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str) -> float:
    predictions = [p.strip() for p in prediction.split(",")]
    parts = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(p, g) for p in predictions) for g in parts) / len(parts)


def score(category: int, prediction: str, gold: str | None) -> float:
    """The LoCoMo score of one reply (0..1)."""
    if category == 5:
        said = prediction.lower()
        return 1.0 if any(phrase in said for phrase in ABSTAINING) else 0.0
    gold = "" if gold is None else str(gold)
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category == 1:
        return multi_answer_f1(prediction, gold)
    return token_f1(prediction, gold)
