"""How far each cheap lever tells answerable questions from unanswerable ones ("nothing on that").

    python -m bench.nothing_levers --beam _data/beam/1 ... _data/beam/20 --locomo locomo_dev.json \
        --cache rankings.json --json

Issue 21's "nothing on that" detector is memdesk/core/retrieval/support.py. This bench measures the
levers the issue names against it, each as a score whose AUROC separates the questions memory can
answer from those it cannot (BEAM's abstention questions, LoCoMo's adversarial ones), on BEAM's
development chats (1-10), BEAM's held-out chats and LoCoMo apart. The ranking of every question
(the fused search with long messages searched by their parts, as the eval judges) is computed once
per conversation and kept in ``--cache``, so each lever, and any later one, is scored from the same
hits without embedding the chats again (embedding twenty BEAM chats takes many minutes).

Levers, all model-free, each a score where higher means "memory answers it":
* ``current``: support.py's score (best share of asked words one of the ten best hits tells, the
  named speaker's minus another speaker's).
* ``rarest words weighted``: the same, each word weighted by its IDF within the conversation.
* ``coverage within one sentence`` / ``within three sentences``: the same, a window of a hit's
  sentences instead of the whole long message.
* ``asked detail told beside its topic`` (minus 1 when not): the detail the question asks for (the
  noun after "what specific", "what was the", "how many", "share the"...), whole, in one sentence
  of a best hit beside another word of the question.
* ``asked detail ever said`` (minus 1 when not): the detail's words occur somewhere in the conversation.
* ``asked words never said`` (minus their share): content words of the question, not words about
  the conversation or the asking, that no message of the conversation holds.
* ``gap between the best hit and the tenth`` (minus it): the search score's relative drop.
* ``combination chosen on development data``: the best weighted sum of the above on BEAM 1-10
  among those keeping LoCoMo's AUROC at 0.85 or more (weights below).
"""

from __future__ import annotations

import json
import math
import re
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from bench.common import bench_parser, percentile
from bench.report import emit
from memdesk.core.retrieval.query import STOP_WORDS, mentioned_names, terms, without_words
from memdesk.core.retrieval.support import DEPTH, NOTHING_BELOW, auroc, support, told_sentences, word_key, words
from memdesk.core.text.words import split_words

#: Hits kept per question in the cache: the ten read and a margin.
KEPT = 30
#: The combination chosen on BEAM's development chats (weights of "asked words never said",
#: "asked detail told beside its topic", "gap between the best hit and the tenth").
CHOSEN = (0.1, 0.1, 0.75)
#: Its bar: the highest that says "nothing" for at most a tenth of the answerable questions of
#: both BEAM 1-10 and LoCoMo (the gap term moves every score below support.py's 0).
CHOSEN_BAR = -0.512

#: Words about the conversation or the asking, not about what was said.
FRAME_WORDS = frozenset(
    word_key(w)
    for w in """
    conversation conversations discussion discussions session sessions chat chats mention mentioned mentioning
    brought bring throughout across summary summarize summarise comprehensive list order tell share give walk
    show explain describe suggest recommend recommended discussed discuss say said talk talked ever specific
    particular exact clear help remind remember key
""".split()
)
#: Words asking for a value (a number, a date, a duration): a figure answers them, not the word.
VALUE_WORDS = frozenset(
    word_key(w)
    for w in """
    many much long percentage percent average number total count amount rate score version date day week month
    year time hour minute often
""".split()
)
_VERB = r"(?:did|do|does|was|were|is|are|have|has|had|will|would|should|can|could|i|you|my|we)"
_NOUNS = r"((?:[\w-]+\s+){0,3}?[\w-]+?)"
_SHAPES = (
    re.compile(
        rf"\b(?:what|which)\s+(?:specific\s+|particular\s+|exact\s+|other\s+)?{_NOUNS}\s+{_VERB}\b", re.IGNORECASE
    ),
    re.compile(
        rf"\bwhat\s+(?:was|were|is|are)\s+(?:the|my|your|his|her|their)\s+{_NOUNS}\s+"
        r"(?:of|for|behind|in|on|at|that|to|from|with|during|between|used|which|who|when)\b",
        re.IGNORECASE,
    ),
    re.compile(rf"\bhow\s+many\s+{_NOUNS}\s+(?:{_VERB}|\w+ed)\b", re.IGNORECASE),
    re.compile(
        rf"\b(?:share|tell\s+me\s+about|describe|list)\s+(?:the\s+|my\s+|any\s+|his\s+|her\s+|their\s+)?{_NOUNS}\s+"
        r"(?:of|for|in|that|which|who|i|you|\w+ed)\b",
        re.IGNORECASE,
    ),
)
_ALTERNATIVES = re.compile(r"\s+or\s+|\s*,\s*|\s*/\s*", re.IGNORECASE)


def asked_detail(question: str) -> list[tuple[str, ...]]:
    """The detail ``question`` asks for beyond its topic, as alternatives ("the agenda or
    structure": either will do), each the words that must be found together; [] when the
    question's shape names none or the detail is a value ("how many days")."""
    for shape in _SHAPES:
        found = shape.search(question)
        if found is None:
            continue
        alternatives = []
        for phrase in _ALTERNATIVES.split(found.group(1)):
            words = tuple(
                word_key(w)
                for w in split_words(phrase)
                if w.casefold() not in STOP_WORDS and word_key(w) not in FRAME_WORDS | VALUE_WORDS
            )
            if words:
                alternatives.append(words)
        return alternatives
    return []


class Question:
    """One question of a cached conversation, with what the levers share."""

    def __init__(self, entry: dict, conversation: Conversation) -> None:
        self.text: str = entry["question"]
        self.unanswerable: bool = entry["unanswerable"]
        self.hits: list[dict] = entry["hits"]
        self.speakers: list[str] = entry["speakers"]
        self.conversation = conversation
        names = mentioned_names(self.text, sorted(s for s in self.speakers if s))
        self.plain = without_words(self.text, sorted(names)) or self.text
        self.named = next(iter(names)) if len(names) == 1 else None
        self.asked = list(dict.fromkeys(word_key(t) for t in terms(self.plain)))
        self.topic = [w for w in self.asked if w not in FRAME_WORDS and w not in VALUE_WORDS]
        self.detail = asked_detail(self.plain)


class Conversation:
    def __init__(self, entry: dict) -> None:
        self.sample_id: str = entry["sample_id"]
        self.said: Counter[str] = Counter()
        for turn in entry["turns"]:
            self.said.update(words(turn["text"]))
        self.size = len(entry["turns"])
        self.questions = [Question(q, self) for q in entry["questions"]]

    def idf(self, word: str) -> float:
        return math.log((self.size + 1) / (self.said.get(word, 0) + 0.5))


def coverage(q: Question, *, weight: Callable[[str], float] = lambda w: 1.0, sentences: int | None = None) -> float:
    """support.py's score with a weight per word and, optionally, a window of ``sentences``
    sentences of a hit in place of the whole message."""
    if not q.asked:
        return 0.0
    total = sum(weight(w) for w in q.asked)
    mine = others = 0.0
    for hit in q.hits[:DEPTH]:
        told = told_sentences(hit["text"])
        units = (
            [" ".join(told)]
            if sentences is None
            else [" ".join(told[i : i + sentences]) for i in range(max(1, len(told) - sentences + 1))]
        )
        covered = max(sum(weight(w) for w in q.asked if w in words(u)) / total for u in units)
        if q.named is None or hit["speaker"] == q.named:
            mine = max(mine, covered)
        else:
            others = max(others, covered)
    return mine - others


def detail_beside_topic(q: Question) -> float:
    """0 when one sentence of a best hit holds the asked detail (an alternative, whole) beside
    another word of the question, or the question asks for no detail; -1 otherwise."""
    if not q.detail:
        return 0.0
    for hit in q.hits[:DEPTH]:
        for sentence in told_sentences(hit["text"]):
            said = words(sentence)
            for alternative in q.detail:
                rest = [w for w in q.topic if w not in alternative]
                if all(w in said for w in alternative) and (not rest or any(w in said for w in rest)):
                    return 0.0
    return -1.0


def detail_ever_said(q: Question) -> float:
    if q.detail and all(any(q.conversation.said.get(w, 0) == 0 for w in alternative) for alternative in q.detail):
        return -1.0
    return 0.0


def never_said(q: Question) -> float:
    if not q.topic:
        return 0.0
    return -sum(q.conversation.said.get(w, 0) == 0 for w in q.topic) / len(q.topic)


def score_gap(q: Question) -> float:
    """Minus the relative drop of the search score from the best hit to the tenth."""
    scores = [h["score"] for h in q.hits]
    if len(scores) < DEPTH or not scores[0]:
        return 0.0
    return -(scores[0] - scores[DEPTH - 1]) / abs(scores[0])


def current(q: Question) -> float:
    return support(q.text, [(h["text"], h["speaker"]) for h in q.hits], q.speakers)


def chosen(q: Question) -> float:
    never, detail, gap = CHOSEN
    return current(q) + never * never_said(q) + detail * detail_beside_topic(q) + gap * score_gap(q)


LEVERS: dict[str, Callable[[Question], float]] = {
    "current": current,
    "rarest words weighted": lambda q: coverage(q, weight=q.conversation.idf),
    "coverage within one sentence": lambda q: coverage(q, sentences=1),
    "coverage within three sentences": lambda q: coverage(q, sentences=3),
    "asked detail told beside its topic": detail_beside_topic,
    "asked detail ever said": detail_ever_said,
    "asked words never said": never_said,
    "asked detail and words never said": lambda q: detail_beside_topic(q) + never_said(q),
    "gap between the best hit and the tenth": score_gap,
    "combination chosen on development data": chosen,
}


def _below(scores: list[float], bar: float) -> float | None:
    return round(sum(s < bar for s in scores) / len(scores), 3) if scores else None


def measure(conversations: list[Conversation]) -> dict:
    """Each lever's AUROC, and the share of each side below its bar (support.py's 0; the chosen
    combination's own)."""
    questions = [q for c in conversations for q in c.questions]
    result: dict = {
        "answerable": sum(not q.unanswerable for q in questions),
        "unanswerable": sum(q.unanswerable for q in questions),
    }
    for name, lever in LEVERS.items():
        bar = CHOSEN_BAR if lever is chosen else NOTHING_BELOW
        answerable = [lever(q) for q in questions if not q.unanswerable]
        unanswerable = [lever(q) for q in questions if q.unanswerable]
        found = auroc(answerable, unanswerable)
        result[name] = {
            "auroc": None if found is None else round(found, 3),
            "bar": bar,
            "nothing_for_answerable": _below(answerable, bar),
            "nothing_for_unanswerable": _below(unanswerable, bar),
        }
    return result


def lever_ms(conversations: list[Conversation]) -> dict:
    """Milliseconds per question (median and p95) of the levers computed from a question's hits."""
    timed = {
        "current": current,
        "asked detail told beside its topic": detail_beside_topic,
        "combination chosen on development data": chosen,
    }
    out = {}
    for name, lever in timed.items():
        spent = []
        for c in conversations:
            for q in c.questions:
                started = time.perf_counter()
                lever(q)
                spent.append(1000 * (time.perf_counter() - started))
        out[name] = (
            {"p50": round(statistics.median(spent), 3), "p95": round(percentile(spent, 0.95), 3)} if spent else None
        )
    return out


def rankings(samples: list[dict], user_name: str, progress: Callable[[str], None]) -> list[dict]:
    """Each sample's turns and, per answerable or unanswerable question, its best ``KEPT`` hits
    (id, score, text, speaker), ranked as ``memdesk eval`` judges them."""
    from memdesk.app.services import default_embedder
    from memdesk.core.evaluation import locomo
    from memdesk.core.memory.recall import RecallMemory
    from memdesk.core.retrieval import MessageRanker, VectorIndex
    from memdesk.core.storage import open_database

    embedder = default_embedder()
    out = []
    with tempfile.TemporaryDirectory(prefix="memdesk-levers-") as folder:
        db = open_database(Path(folder) / "memdesk.sqlite3")
        ranker = MessageRanker(db, embedder, VectorIndex(db), user_name=lambda: user_name)
        ranker.by_parts = True
        recall = RecallMemory(db, embedder, ranker=ranker)
        try:
            for sample in samples:
                ids = locomo._load_conversation(db, recall, sample)
                agent_id = ids.pop("agent_id")
                questions = []
                for qa in sample["qa"]:
                    kind = locomo.category_name(qa["category"])
                    unanswerable = kind in locomo.UNANSWERABLE
                    if not unanswerable and not any(e in ids for e in qa.get("evidence", [])):
                        continue
                    ranked = recall.rank(agent_id, qa["question"], graph_weight=0.0)[:KEPT]
                    texts = {m.id: m.search_text for m in recall.get_many([r.id for r in ranked])}
                    speakers, said_by = recall.speakers(agent_id, [r.id for r in ranked])
                    questions.append(
                        {
                            "question": qa["question"],
                            "category": kind,
                            "unanswerable": unanswerable,
                            "speakers": sorted(speakers),
                            "hits": [
                                {"score": r.score, "text": texts.get(r.id, ""), "speaker": who}
                                for r, who in zip(ranked, said_by, strict=True)
                            ],
                        }
                    )
                turns = [
                    t
                    for name, v in sample["conversation"].items()
                    if name.startswith("session_") and isinstance(v, list)
                    for t in v
                ]
                out.append(
                    {
                        "sample_id": sample["sample_id"],
                        "turns": [{"text": locomo.turn_text(t)} for t in turns],
                        "questions": questions,
                    }
                )
                progress(sample["sample_id"])
        finally:
            db.close()
    return out


def main(argv: list[str] | None = None) -> None:
    import sys

    from memdesk.core.evaluation.beam import DEVELOPMENT, USER, load_chats

    parser = bench_parser(__doc__)
    parser.add_argument("--beam", type=Path, nargs="*", default=[], metavar="DIR", help="BEAM chat folders")
    parser.add_argument("--locomo", type=Path, help="LoCoMo's locomo_dev.json")
    parser.add_argument("--cache", type=Path, help="rankings kept here (JSON), read back when it exists")
    args = parser.parse_args(argv)
    progress = lambda name: print(f"ranked {name}", file=sys.stderr, flush=True)  # noqa: E731
    if args.cache and args.cache.is_file():
        cached = json.loads(args.cache.read_text(encoding="utf-8"))
    else:
        cached = {
            "beam": rankings(load_chats(args.beam), USER, progress) if args.beam else [],
            "locomo": rankings(json.loads(args.locomo.read_text(encoding="utf-8")), "", progress)
            if args.locomo
            else [],
        }
        if args.cache:
            args.cache.write_text(json.dumps(cached), encoding="utf-8")
    beam = [Conversation(c) for c in cached["beam"]]
    locomo = [Conversation(c) for c in cached["locomo"]]
    result = {
        "beam development": measure([c for c in beam if c.sample_id in DEVELOPMENT]),
        "beam held out": measure([c for c in beam if c.sample_id not in DEVELOPMENT]),
        "locomo": measure(locomo),
        "chosen weights (never said, detail beside topic, gap)": list(CHOSEN),
        "lever ms per question (beam)": lever_ms(beam),
    }
    emit(result, args.json)


if __name__ == "__main__":
    main()
