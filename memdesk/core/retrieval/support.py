"""How well memory supports a question: a calibrated "I have nothing on that" signal.

A search always returns its best hits, relevant or not, so their being there says nothing. What
does: whether the words the question asks about occur in what was found, and *who* said them.
LoCoMo's unanswerable (adversarial) questions ask about one speaker what the other one said ("What
did Melanie realize after the charity race?" when Caroline ran it): the matching messages exist,
but none of the named speaker's. So the support of a question is the best share of its content
words that one of the top hits covers, taken over the hits of the speaker the question names
(anyone's when it names none), minus the best share one of another speaker's hits covers.

Measured on LoCoMo's five development conversations (AUROC between answerable and adversarial
questions, the best hits of conversation search): coverage alone 0.52, the named speaker's coverage
0.70, its difference to the others' 0.79, and 0.86 once questions in the hits are not read as
telling anything (the same question asked earlier covered every word). Weighting words by rarity,
word stems or deeper hit lists moved it by less than 0.01. Scores are not comparable across
rankings (they are scaled per query), so only the texts and speakers of the hits are used.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence

from memdesk.core.retrieval.query import mentioned_names, terms, without_words
from memdesk.core.text.words import split_words

#: Hits looked at, best first: the few a reader would look at before saying "nothing".
DEPTH = 10
#: Below this support, nothing found answers the question. Chosen on the development data so that
#: at most a tenth of answerable questions fall below (docs/evaluation.md has the figures).
NOTHING_BELOW = 0.0
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")


def word_key(word: str) -> str:
    """A word as compared: case-folded, a plural's "s" dropped ("agencies" still misses "agency":
    measured, stems changed nothing)."""
    word = word.casefold()
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def words(text: str) -> set[str]:
    return {word_key(w) for w in split_words(text)}


def told_sentences(text: str) -> list[str]:
    """The sentences of ``text`` that tell: a question asks, it does not tell ("Did you go camping?"
    is no answer to "Where did Melanie camp?", and the same question asked before is none either)."""
    return [
        sentence for sentence in SENTENCE_BREAK.split(text) if sentence.strip() and not sentence.rstrip().endswith("?")
    ]


def support(query: str, hits: Sequence[tuple[str, str]], speakers: Iterable[str]) -> float:
    """``hits``: (text, speaker) of the search's results, best first; ``speakers``: everyone who
    speaks in the conversation. From -1 (another speaker said all of it, the one asked about
    nothing) to 1 (one hit holds every word asked about); 0 when the query has no content words."""
    names = mentioned_names(query, sorted(s for s in speakers if s))
    asked = list(dict.fromkeys(word_key(t) for t in terms(without_words(query, sorted(names)) or query)))
    if not asked:
        return 0.0
    named = next(iter(names)) if len(names) == 1 else None
    mine, others = 0.0, 0.0
    for text, speaker in hits[:DEPTH]:
        said = words(" ".join(told_sentences(text)))
        covered = sum(word in said for word in asked) / len(asked)
        if named is None or speaker == named:
            mine = max(mine, covered)
        else:
            others = max(others, covered)
    return mine - others


def says_nothing(score: float, bar: float = NOTHING_BELOW) -> bool:
    return score < bar


def auroc(answerable: Sequence[float], unanswerable: Sequence[float]) -> float | None:
    """The chance that an answerable question scores above an unanswerable one (ties count half);
    None when either side is empty."""
    if not answerable or not unanswerable:
        return None
    above = ties = 0
    ordered = sorted(unanswerable)
    for value in answerable:
        low = bisect.bisect_left(ordered, value)
        high = bisect.bisect_right(ordered, value)
        above += low
        ties += high - low
    return (above + 0.5 * ties) / (len(answerable) * len(unanswerable))
