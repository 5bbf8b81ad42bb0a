"""The LoCoMo retrieval evaluation: does conversation_search bring back the evidence turns?

Each conversation is loaded into a fresh temporary store as one agent's recall memory (one message
per turn, the session's date as its time, the speaker as its author); every question is ranked by
the same code conversation_search uses. recall@k is LoCoMo's own definition: the share of a
question's evidence turns in the top k, averaged over questions; questions whose evidence ids do not
exist in the conversation are skipped.
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memdesk.core.base.clock import SystemClock, iso, parse_month
from memdesk.core.embedding import Embedder
from memdesk.core.graph.extraction import ExtractionOptions, GraphExtractor
from memdesk.core.graph.store import KnowledgeGraph
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.retrieval import MessageRanker, VectorIndex, learned
from memdesk.core.retrieval.learned import LearnedScorer
from memdesk.core.retrieval.messages import GRAPH_WEIGHT
from memdesk.core.retrieval.support import DEPTH as SUPPORT_DEPTH
from memdesk.core.retrieval.support import NOTHING_BELOW, auroc, support
from memdesk.core.storage import open_database

#: Conversations the fusion weights were tuned on; the others are held out to check generalisation.
TUNING_CONVERSATIONS = ("conv-26", "conv-30", "conv-41")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
MODES = ("fused", "bm25", "fused/whole")
GRAPH_MODE = "fused+graph"
#: The learned scorer's ranking (memdesk.core.retrieval.learned), measured when a model ships.
LEARNED_MODE = "learned"
#: The fused search with long messages scored as a whole, not by their best part (the lever's baseline).
WHOLE_MODE = "fused/whole"
#: Question kinds memory cannot answer: LoCoMo's adversarial questions (asked of the wrong speaker)
#: and BEAM's abstention questions (never discussed). The "nothing on that" detector should tell them apart.
UNANSWERABLE = ("adversarial", "abstention")


_SESSION_TIME = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),\s*(\d{4})", re.IGNORECASE)


def session_time(text: str) -> datetime:
    """LoCoMo's ``1:56 pm on 8 May, 2023`` (parsed by hand: strptime's %B and %p follow the locale)."""
    found = _SESSION_TIME.fullmatch(text.strip())
    if found is None:
        raise ValueError(f"not a LoCoMo session time: {text!r}")
    hour, minute, half, day, month, year = found.groups()
    hour = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    return datetime(int(year), parse_month(month), int(day), hour, int(minute), tzinfo=UTC)


def turn_text(turn: dict) -> str:
    """What the agent would have seen: the words, plus the caption of a shared photo."""
    text = turn.get("text", "")
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def _load_conversation(db, recall: RecallMemory, sample: dict) -> dict[str, int]:
    now = iso(datetime.now(UTC))
    agent_id = db.execute(
        "INSERT INTO agents(name, created_at, system_prompt) VALUES (?, ?, '')", (f"locomo-{sample['sample_id']}", now)
    ).lastrowid
    ids: dict[str, int] = {}
    conversation = sample["conversation"]
    number = 1
    with db.transaction():
        while f"session_{number}" in conversation:
            start = session_time(conversation[f"session_{number}_date_time"])
            for offset, turn in enumerate(conversation[f"session_{number}"]):
                text = turn_text(turn)
                message = recall.add(
                    agent_id,
                    role="user",
                    kind="user_message",
                    content=text,
                    search_text=text,
                    author=turn["speaker"],
                    created_at=start + timedelta(seconds=offset),
                )
                ids[turn["dia_id"]] = message.id
            number += 1
    return {"agent_id": agent_id, **ids}


def build_graph(db, agent_id: int, analyser) -> dict:
    """The knowledge graph of a loaded conversation: entities, mentions and dependency facts from
    the NLP pass only (no chat model), as after the background extraction had caught up."""
    graph = KnowledgeGraph(db, SystemClock())
    extractor = GraphExtractor(graph, analyser, SystemClock(), ExtractionOptions(model_facts=False))
    extractor.enqueue(agent_id)
    started = time.perf_counter()
    report = extractor.run_entities(agent_id)
    seconds = time.perf_counter() - started
    return {
        "messages": report.sources,
        "seconds": round(seconds, 2),
        "entities": report.entities,
        "facts": report.facts,
    }


def category_name(category) -> str:
    """A question's row in the tables: LoCoMo's numbered categories by name, other data sets'
    kinds (BEAM's "multi_session_reasoning") as they are."""
    if isinstance(category, int) or (isinstance(category, str) and category.isdigit()):
        return CATEGORIES.get(int(category), f"category {category}")
    return str(category)


def _support(recall: RecallMemory, agent_id: int, question: str) -> tuple[float, list]:
    """The "nothing on that" score of a question (memdesk.core.retrieval.support) on the search's
    best hits, and those hits (MessageRank)."""
    ranked = recall.rank(agent_id, question, graph_weight=0.0)[:SUPPORT_DEPTH]
    top = [r.id for r in ranked]
    texts = {m.id: m.search_text for m in recall.get_many(top)}
    speakers, said_by = recall.speakers(agent_id, top)
    judged = support(question, [(texts.get(i, ""), who) for i, who in zip(top, said_by, strict=True)], speakers)
    return judged, ranked


def _judge(
    supports: dict,
    group: str,
    ranker: MessageRanker,
    recall: RecallMemory,
    agent_id: int,
    question: str,
    unanswerable: bool,
    scorer: LearnedScorer | None,
) -> None:
    """Both "nothing on that" judgements: support.py's score on the hand fusion's hits
    (``by_support``) and, with a model, its judge on the learned ranking's hits (what automatic
    recall then uses)."""
    ranker.by_parts = True
    ranker.scorer = None
    judged, _ = _support(recall, agent_id, question)
    for bucket in ("all", group):
        supports["by_support"][bucket][not unanswerable].append(judged)
    if scorer is not None and scorer.judge is not None:
        ranker.scorer = scorer
        value, hits = _support(recall, agent_id, question)
        if hits and all(h.features is not None for h in hits):
            judged = scorer.nothing_support(value, np.stack([h.features for h in hits])) or 0.0
        ranker.scorer = None
    for bucket in ("all", group):
        supports["app"][bucket][not unanswerable].append(judged)


def newer_above_older(ranked: list[int], qa: dict, ids: dict[str, int]) -> list[bool]:
    """For a knowledge update (BEAM's original and updated statements), each (older, newer) pair:
    is the newer ranked above the older (one missing from the ranking is below every ranked one)?"""
    groups = qa.get("evidence_groups") or []
    if category_name(qa["category"]) != "knowledge_update" or len(groups) != 2:
        return []
    place = {m: k for k, m in enumerate(ranked)}
    far = len(ranked) + 1
    older = [ids[e] for e in groups[0] if e in ids]
    newer = [ids[e] for e in groups[1] if e in ids]
    return [place.get(n, far) < place.get(o, far) for o in older for n in newer if o != n]


def detector_report(answerable: list[float], unanswerable: list[float], bar: float = NOTHING_BELOW) -> dict:
    """How well the support score tells answerable from unanswerable questions: AUROC, and the share
    of each side that falls below the bar (where automatic recall says nothing clearly answers)."""
    below = lambda scores: round(sum(s < bar for s in scores) / len(scores), 4) if scores else None  # noqa: E731
    found = auroc(answerable, unanswerable)
    return {
        "auroc": None if found is None else round(found, 4),
        "bar": bar,
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "nothing_for_answerable": below(answerable),
        "nothing_for_unanswerable": below(unanswerable),
    }


def evaluate(
    path: Path,
    embedder: Embedder,
    *,
    ks: tuple[int, ...] = (5, 10),
    progress=None,
    analyser=None,
    graph_weight: float = GRAPH_WEIGHT,
) -> dict:
    """With ``analyser`` (memdesk.core.graph.nlp.SpacyAnalyser) each conversation also gets its
    knowledge graph, and the "fused+graph" mode ranks with graph expansion in the same run."""
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    return evaluate_samples(samples, embedder, ks=ks, progress=progress, analyser=analyser, graph_weight=graph_weight)


def evaluate_samples(
    samples: list[dict],
    embedder: Embedder,
    *,
    ks: tuple[int, ...] = (5, 10),
    progress=None,
    analyser=None,
    graph_weight: float = GRAPH_WEIGHT,
    tuned_on: tuple[str, ...] = TUNING_CONVERSATIONS,
    user_name: str = "",
    scorer: LearnedScorer | None | bool = True,
) -> dict:
    """Conversations in LoCoMo's shape (another data set converted to it, such as BEAM) ranked as
    ``evaluate`` does; ``tuned_on`` names the conversations tuned on (the rest are held out);
    ``user_name``: the speaker who asks the questions, as the app's setting of that name;
    ``scorer``: the learned ranking model (True: the shipped one, if any), measured as the
    ``learned`` mode beside the hand fusion."""
    if scorer is True:
        scorer = learned.shipped()
    model = scorer if isinstance(scorer, LearnedScorer) else None
    modes = MODES + ((GRAPH_MODE,) if analyser is not None else ()) + ((LEARNED_MODE,) if model and model.ranks else ())
    recalls: dict[str, dict[tuple, list[float]]] = {mode: defaultdict(list) for mode in modes}
    latency: dict[str, list[float]] = {mode: [] for mode in modes}
    graphs: dict[str, dict] = {}
    skipped = 0
    # judgement -> bucket -> answerable? -> scores
    supports: dict[str, dict[str, dict[bool, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: {True: [], False: []})
    )
    pairs: dict[str, list[bool]] = defaultdict(list)  # mode -> a knowledge update's newer statement above the older?
    with tempfile.TemporaryDirectory(prefix="memdesk-locomo-") as folder:
        db = open_database(Path(folder) / "memdesk.sqlite3")
        ranker = MessageRanker(db, embedder, VectorIndex(db), user_name=lambda: user_name)
        recall = RecallMemory(db, embedder, ranker=ranker)
        try:
            for sample in samples:
                ids = _load_conversation(db, recall, sample)
                agent_id = ids.pop("agent_id")
                if analyser is not None:
                    graphs[sample["sample_id"]] = build_graph(db, agent_id, analyser)
                group = "tuned" if sample["sample_id"] in tuned_on else "held_out"
                for qa in sample["qa"]:
                    evidence = {ids[e] for e in qa.get("evidence", []) if e in ids}
                    category = category_name(qa["category"])
                    unanswerable = category in UNANSWERABLE
                    if not evidence:
                        skipped += 1
                        if (
                            unanswerable
                        ):  # BEAM's abstention questions have no evidence, yet the detector is judged on them
                            _judge(supports, group, ranker, recall, agent_id, qa["question"], unanswerable, model)
                        continue
                    for mode in modes:
                        ranker.by_parts = mode != WHOLE_MODE
                        ranker.scorer = model if mode == LEARNED_MODE else None
                        started = time.perf_counter()
                        ranking = recall.rank(
                            agent_id,
                            qa["question"],
                            dense=mode != "bm25",
                            graph_weight=graph_weight if mode == GRAPH_MODE else 0.0,
                        )
                        latency[mode].append(time.perf_counter() - started)
                        ranked = [r.id for r in ranking]
                        for k in ks:
                            value = len(evidence & set(ranked[:k])) / len(evidence)
                            for bucket in ("all", category, group, f"{group}/{category}", sample["sample_id"]):
                                recalls[mode][(bucket, k)].append(value)
                        pairs[mode] += newer_above_older(ranked, qa, ids)
                    ranker.scorer = None
                    # After the timed searches: judged on the rankings, which are cached by then.
                    _judge(supports, group, ranker, recall, agent_id, qa["question"], unanswerable, model)
                if progress:
                    progress(sample["sample_id"])
        finally:
            db.close()
    report: dict = {"questions": len(recalls["fused"][("all", ks[0])]), "skipped": skipped, "tuned_on": list(tuned_on)}
    for mode in modes:
        table: dict[str, dict[str, float]] = defaultdict(dict)
        for (bucket, k), values in recalls[mode].items():
            table[bucket][f"recall@{k}"] = round(sum(values) / len(values), 4)
            table[bucket]["n"] = len(values)
        report[mode] = dict(table)
    report["search_ms"] = {
        mode: round(1000 * statistics.median(values), 2) for mode, values in latency.items() if values
    }
    report["newer_above_older"] = {
        mode: {"share": round(sum(found) / len(found), 4), "pairs": len(found)}
        for mode, found in pairs.items()
        if found
    }
    # what automatic recall says (the learned judge when the model has one), and support.py's score alone
    report["nothing_detector"] = {
        bucket: detector_report(scores[True], scores[False]) for bucket, scores in supports["app"].items()
    }
    report["nothing_detector_by_support"] = {
        bucket: detector_report(scores[True], scores[False]) for bucket, scores in supports["by_support"].items()
    }
    if model is not None:
        report["model"] = {"name": model.name, "judge": model.judge is not None, **model.card}
    if analyser is not None:
        report["graph"] = {"weight": graph_weight, **graphs}
    return report
