"""Two versions of one fact among search hits: an update ("150 commits", later "165 commits") or a
contradiction ("I have never used Flask-Login", elsewhere "Flask-Login was integrated").

A memory that holds both, undated and unmarked, lets a model answer with whichever it reads first,
often the older. Here pairs of hits are found without a model, by their words:

* an **update**: both state a quantity of the same kind (a unit word such as "commits", a
  percentage, a time of day, a date) about the same subject (at least ``MIN_SHARED`` content words
  near each number in common), and the values differ;
* a **contradiction**: one says "never" (or "haven't", "didn't", "no longer" ...) about something
  and a sentence of the other says it without a negation, sharing at least ``MIN_SHARED`` of the
  negated claim's content words and ``CLAIM_SHARE`` of them.

The search ranking itself puts the newer of two values first when both state what the question
asks (``newer_values_first``): a quantity of a kind the question names ("How many commits ...":
"150 commits", later "165 commits"; "When is ... scheduled": two dates or times).

Words are compared by their first ``STEM`` letters ("integrate", "integrated" and "integration"
agree), stop words and a chat's filler words ("trying", "kinda", "project") left out. Code blocks
are skipped: their numbers are not facts about the person. Only dated hits pair, and the later one
is the newer; two statements of one message never pair (nothing to order).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memdesk.core.retrieval.query import STOP_WORDS

UPDATE = "update"
CONTRADICTION = "contradiction"
#: Content words two statements must share to be about the same thing.
MIN_SHARED = 2
#: Words the question asks about that the clauses around the two statements share (when the pairs
#: are sought for a question). On BEAM chats 1-10 (docs/evaluation.md): 1, with WINDOW 15, marked
#: the asked pair for 0.46 of the update and contradiction questions and put a marked pair in 0.86
#: of the other questions' sections; 2 (WINDOW 8): 0.37 and 0.41; 3: 0.34 and 0.23.
MIN_ASKED = 2
#: Share of a negated claim's content words the other statement must hold (tuned on BEAM chats 1-10).
CLAIM_SHARE = 0.3
#: Words either side of a number that say what it counts (twice as far for a bare number's unit).
WINDOW = 8
#: Words after a negation that make up its claim (up to a clause-ending conjunction).
CLAIM_WORDS = 12
#: Letters a word is compared by.
STEM = 5

_CODE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_TOKEN = re.compile(
    r"\d{1,2}:\d\d|\d{1,3}(?:,\d{3})+(?:\.\d+)?%?[A-Za-z]*|\d+(?:\.\d+)*%?[A-Za-z]*|[A-Za-z][A-Za-z'’-]*"
)
_NUMBER = re.compile(r"(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(%|[A-Za-z]+)?")
_NEGATION = re.compile(
    r"\b(?:never|haven't|hasn't|hadn't|didn't|have not|has not|had not|did not|no longer)\b", re.IGNORECASE
)
_CLAIM_END = frozenset("but so because which though although while since as".split())
_MONTH_INDEX = {
    m: n
    for n, m in enumerate(
        "january february march april may june july august september october november december".split(), 1
    )
}
_CLOCK = frozenset(("am", "pm"))
#: Words a technical chat uses in nearly every message: sharing them says nothing.
_FILLER = frozenset(
    """
    trying try tried want wanted make sure help need needed kinda like just really know think thing things way ways
    also still actually recently currently now new good better able going gonna get getting got well much many one
    even ever anything something before since already project app application work working i'm i've i'd it's i'll
    can could would should please thanks thank let's doing done started start starting used using use hmm yeah okay
    worried curious struggling wondering feel feeling
    """.split()
)


@dataclass(frozen=True)
class VersionPair:
    newer: int  # index of the newer statement in the list given
    older: int
    kind: str  # UPDATE or CONTRADICTION
    shared: tuple[str, ...]  # the words (stems) that make them about one thing


@dataclass(frozen=True)
class _Quantity:
    value: float
    unit: str  # a stem, "%", "time", "date" or "" (a bare number)
    near: frozenset[str]  # content stems around it
    wide: frozenset[
        str
    ]  # within twice as far: where a bare number's unit may have been said ("commits ... now reached 165")


@dataclass(frozen=True)
class _Features:
    quantities: tuple[_Quantity, ...]
    claims: tuple[frozenset[str], ...]  # what each negation in it denies
    affirmed: tuple[frozenset[str], ...]  # content stems of each sentence without a negation


def stem(word: str) -> str:
    word = word.casefold().replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    return word[:STEM]


def _content(word: str) -> bool:
    """A word that can say what a statement is about (months cannot: two dates share them)."""
    folded = word.casefold().replace("’", "'")
    single = folded[:-1] if folded.endswith("s") else folded
    return (
        len(folded) > 2
        and folded.replace("'", "").replace("-", "").isalpha()
        and folded not in STOP_WORDS
        and not {folded, single} & _FILLER
        and folded not in _MONTH_INDEX
    )


def _number(token: str) -> tuple[float, str] | None:
    """A token's value and the unit written onto it ("250ms", "65%"); None for versions and years."""
    found = _NUMBER.fullmatch(token)
    if found is None or token.count(".") > 1:
        return None
    whole, fraction, unit = found.groups()
    if len(whole) == 4 and whole[:2] in ("19", "20") and not fraction and not unit:
        return None  # a year: dates are read with their month
    return float(whole.replace(",", "") + (fraction or "")), (unit or "").casefold()


def _numbers(tokens: list[str]) -> list[tuple[int, float, str]]:
    """Each quantity's token index, value and kind ("date", "time", "%", a unit's stem or "")."""
    found: list[tuple[int, float, str]] = []
    for i, token in enumerate(tokens):
        if not token[0].isdigit():  # a word (most tokens): no regular expression asked
            continue
        if ":" in token:  # 4:30 (PM)
            hours, minutes = token.split(":")
            found.append((i, int(hours) * 60 + int(minutes), "time"))
            continue
        number = _number(token)
        if number is None or (i > 0 and tokens[i - 1].casefold() in ("v", "version")):
            continue
        value, unit = number
        following = tokens[i + 1].casefold() if i + 1 < len(tokens) else ""
        if i > 0 and tokens[i - 1].casefold() in _MONTH_INDEX:
            value, unit = _MONTH_INDEX[tokens[i - 1].casefold()] * 100 + value, "date"
        elif unit in _CLOCK or following in _CLOCK:
            value, unit = value * 60, "time"
        elif unit == "%" or following in ("percent", "%"):
            unit = "%"
        elif unit:
            unit = stem(unit)
        elif _content(following):
            unit = stem(following)
        found.append((i, value, unit))
    return found


def _quantities(tokens: list[str]) -> list[_Quantity]:
    found = _numbers(tokens)

    def around(i: int, width: int) -> frozenset[str]:
        return frozenset(stem(t) for t in tokens[max(0, i - width) : i + width + 1] if _content(t))

    return [_Quantity(value, unit, around(i, WINDOW), around(i, 2 * WINDOW)) for i, value, unit in found]


def _claims(sentence: str) -> list[frozenset[str]]:
    claims = []
    for cue in _NEGATION.finditer(sentence):
        words = []
        for token in _TOKEN.findall(sentence[cue.end() :])[:CLAIM_WORDS]:
            if token.casefold() in _CLAIM_END:
                break
            words.append(token)
        stems = frozenset(stem(w) for w in words if _content(w))
        if len(stems) >= MIN_SHARED:
            claims.append(stems)
    return claims


def features(text: str) -> _Features:
    quantities: list[_Quantity] = []
    claims: list[frozenset[str]] = []
    affirmed: list[frozenset[str]] = []
    for sentence in _SENTENCE.split(_CODE.sub(" ", text)):
        tokens = _TOKEN.findall(sentence)
        if not tokens:
            continue
        quantities.extend(_quantities(tokens))
        said = _claims(sentence)
        if said:
            claims.extend(said)
        else:
            affirmed.append(frozenset(stem(t) for t in tokens if _content(t)))
    return _Features(tuple(quantities), tuple(claims), tuple(affirmed))


def _updated(older: _Features, newer: _Features) -> tuple[str, ...] | None:
    for a in older.quantities:
        for b in newer.quantities:
            if a.value == b.value:
                continue
            # a bare number ("has now reached 165") counts what the other's unit names, if said nearby
            same_kind = (
                a.unit == b.unit
                if (a.unit and b.unit)
                else bool(a.unit or b.unit) and (a.unit or b.unit) in (b.wide if a.unit else a.wide)
            )
            if not same_kind:
                continue
            if len((a.near & b.near) - {a.unit, b.unit}) >= MIN_SHARED:
                return tuple(sorted((a.wide & b.wide) - {a.unit, b.unit}))  # what the clauses around them share
    return None


def _contradicted(one: _Features, other: _Features) -> tuple[str, ...] | None:
    for claim in one.claims:
        for sentence in other.affirmed:
            shared = claim & sentence
            if len(shared) >= MIN_SHARED and len(shared) >= CLAIM_SHARE * len(claim):
                return tuple(sorted(shared))
    return None


def find_versions(
    statements: Sequence[tuple[str, datetime | None]], about: str = "", speakers: Sequence[object] | None = None
) -> list[VersionPair]:
    """Pairs among ``statements`` ((text, when said), best first) that state one fact twice
    differently; each statement is in at most one pair, the best-placed pairs first. ``about``:
    the question they were found for; a pair must then share a word with it (a long technical
    chat holds many numbers and negations: only versions of what is asked about are worth a
    mark). ``speakers``: who said each; a pair is one person's two statements."""
    asked = {stem(w) for w in _TOKEN.findall(about) if _content(w)}
    read = [features(text) if at is not None else None for text, at in statements]
    pairs: list[VersionPair] = []
    paired: set[int] = set()
    for j in range(len(statements)):
        for i in range(j):
            ri, rj = read[i], read[j]
            ti, tj = statements[i][1], statements[j][1]
            if i in paired or j in paired or ri is None or rj is None or ti is None or tj is None:
                continue
            if (
                ti == tj
                or statements[i][0] == statements[j][0]
                or (speakers is not None and speakers[i] != speakers[j])
            ):
                continue
            newer, older = (i, j) if ti > tj else (j, i)
            shared = _updated(rj, ri) if ti > tj else _updated(ri, rj)
            kind = UPDATE
            if shared is None:
                shared = _contradicted(ri, rj) or _contradicted(rj, ri)
                kind = CONTRADICTION
            if shared is not None and (not asked or len(asked & set(shared)) >= MIN_ASKED):
                pairs.append(VersionPair(newer, older, kind, shared))
                paired.update((i, j))
    return pairs


#: The best hits of a search ranking compared for two values of what the question asks. On BEAM
#: chats 1-10 (docs/ranker.md): 5 put the newer value above the older in 0.773 of the knowledge
#: updates' pairs (0.455 before), 10 in 0.682 (more pairs of other hits take the evidence's place).
NEWER_FIRST_DEPTH = 5
#: A question that asks for a time or a date, or a share: the quantities it asks about.
_ASKS_WHEN = re.compile(r"\b(?:when|what time|dates?|deadlines?|schedul\w*)\b", re.IGNORECASE)
_ASKS_SHARE = frozenset(("perce", "rate", "accur", "cover"))
_DIGIT = re.compile(r"\d")


def asked_kinds(question: str) -> frozenset[str]:
    """The kinds of quantity a question asks about: its content words' stems (a unit such as
    "commi"), "time" and "date" for a when-question, "%" for a percentage or rate."""
    asked = {stem(w) for w in _TOKEN.findall(question) if _content(w)}
    if _ASKS_WHEN.search(question):
        asked |= {"time", "date"}
    if asked & _ASKS_SHARE:
        asked.add("%")
    return frozenset(asked)


def newer_values_first(question: str, hits: Sequence[tuple[str, object, object]]) -> list[int]:
    """The order (indexes into ``hits``: (text, speaker, when), best first) in which a newer
    statement of what ``question`` asks comes right above an older one of the same speaker: both
    state a quantity of a kind the question asks about (``asked_kinds``) and their values of it
    differ. Each hit is in at most one pair, the oldest statements paired first; the rest keep
    their order. ``when`` only needs to sort (a time, or a (time, id) pair)."""
    asked = asked_kinds(question)
    values: list[dict[str, set[float]]] = []
    for text, _, _ in hits:
        found: dict[str, set[float]] = {}
        for sentence in _SENTENCE.split(_CODE.sub(" ", text)):  # as features() reads them, less the words around
            if not _DIGIT.search(sentence):
                continue
            for _, value, unit in _numbers(_TOKEN.findall(sentence)):
                if unit and unit in asked:
                    found.setdefault(unit, set()).add(value)
        values.append(found)
    chronological = sorted(range(len(hits)), key=lambda k: hits[k][2])  # type: ignore[arg-type,return-value]
    order = list(range(len(hits)))
    paired: set[int] = set()
    for a, older in enumerate(chronological):
        for newer in chronological[a + 1 :]:
            if older in paired or newer in paired or hits[older][1] != hits[newer][1]:
                continue
            if any(
                values[newer].get(unit, found) != found
                for unit, found in values[older].items()
                if unit in values[newer]
            ):
                paired.update((older, newer))
                if order.index(newer) > order.index(older):
                    order.remove(newer)
                    order.insert(order.index(older), newer)
    return order
