"""Train the learned ranker and its "nothing on that" judge; report dev (cross-validated) and held-out figures.

    python -m bench.ranker_data ... --out .bench/ranker_data          # the candidates and their features
    python -m bench.train_ranker --data .bench/ranker_data --json [--write memdesk/resources/ranker.json]

Development data only: LoCoMo's five conversations and BEAM 100K chats 1-10. Cross-validation is
by conversation (``FOLDS`` folds; a question's own conversation is never in its training fold).
BEAM chats 11-20 are held out: scored once, by the model trained on all the development data.
Three rankers are compared on the same candidates: the hand fusion (today's ranking), a linear
model (logistic regression on standardised features) and gradient-boosted trees with LightGBM's
LambdaRank. The judge is a logistic regression over the best hits' features (nothing_judge.py),
trained on the cross-validated rankings, with LoCoMo's adversarial and BEAM's abstention
questions as positives. ``--write`` writes the model file only when the chosen ranker beats the
hand fusion on the held-out chats (issue 34: a model that only wins on its training data does
not ship). Needs the bench extra (lightgbm, scikit-learn); the app does not.
"""

from __future__ import annotations

import json
import pickle
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from bench.common import bench_parser
from bench.report import emit
from memdesk.core.retrieval import features
from memdesk.core.retrieval.learned import FORMAT, FORMAT_VERSION, Linear, Trees, parse
from memdesk.core.retrieval.nothing_judge import JUDGE_FEATURES, judge_features
from memdesk.core.retrieval.support import auroc, support

FOLDS = 5
SEED = 34
K = 10
#: LambdaRank's trees: small, so that a thousand candidates score in a few milliseconds.
TREE_PARAMS = {
    "objective": "lambdarank",
    "n_estimators": 150,
    "num_leaves": 15,
    "learning_rate": 0.05,
    "min_child_samples": 40,
    "subsample": 0.8,
    "subsample_freq": 1,
    "colsample_bytree": 0.8,
    "lambdarank_truncation_level": 30,
    "label_gain": [0, 1, 3],
    "verbose": -1,
    "n_jobs": 1,
}
#: The judge says "nothing" for at most this share of the answerable questions (issue 34).
FLAGGED_ANSWERABLE = 0.10


def load(folder: Path) -> list[dict]:
    conversations = [pickle.loads(p.read_bytes()) for p in sorted(folder.glob("*.pkl"))]
    for c in conversations:
        if c["features"] != list(features.FEATURES):
            raise SystemExit(f"{c['sample_id']}: collected with other features; run bench.ranker_data again")
        c["set"] = "locomo" if c["kind"] == "locomo" else ("beam_dev" if int(c["sample_id"]) <= 10 else "beam_held_out")
    return conversations


def folds(conversations: list[dict]) -> list[list[str]]:
    """Development conversations in FOLDS groups, LoCoMo's and BEAM's spread over all of them."""
    groups: list[list[str]] = [[] for _ in range(FOLDS)]
    dev = [c for c in conversations if c["set"] != "beam_held_out"]
    for n, c in enumerate(sorted(dev, key=lambda c: (c["kind"], c["sample_id"]))):
        groups[n % FOLDS].append(f"{c['kind']}-{c['sample_id']}")
    return groups


def _name(c: dict) -> str:
    return f"{c['kind']}-{c['sample_id']}"


def _answerable(c: dict) -> list[dict]:
    return [q for q in c["questions"] if q["evidence"]]


#: A BEAM question weighs this many LoCoMo questions in training (``--beam-weight``; BEAM's
#: development chats hold 179 answerable questions against LoCoMo's 996). 1 cross-validated best
#: on the development data (docs/ranker.md).
BEAM_WEIGHT = 1.0


def matrix(conversations: list[dict]) -> tuple[np.ndarray, np.ndarray, list[int], np.ndarray]:
    rows, labels, sizes, weights = [], [], [], []
    for c in conversations:
        for q in _answerable(c):
            if not (q["labels"] > 0).any():
                continue  # no evidence among the candidates: nothing to learn from the question
            rows.append(q["rows"])
            labels.append(q["labels"])
            sizes.append(len(q["labels"]))
            weights.append(np.full(len(q["labels"]), BEAM_WEIGHT if c["kind"] == "beam" else 1.0))
    return (
        np.concatenate(rows).astype(np.float64),
        np.concatenate(labels).astype(np.int64),
        sizes,
        np.concatenate(weights),
    )


class HandFusion:
    name = "hand fusion"

    def fit(self, conversations: list[dict]) -> HandFusion:
        return self

    def score(self, rows: np.ndarray) -> np.ndarray:
        return rows[:, features.INDEX["fused"]]


class LinearRanker:
    name = "linear"

    def fit(self, conversations: list[dict]) -> LinearRanker:
        from sklearn.linear_model import LogisticRegression

        x, y, _, w = matrix(conversations)
        self.mean, self.std = x.mean(axis=0), x.std(axis=0) + 1e-9
        model = LogisticRegression(C=1.0, max_iter=2000, class_weight="balanced")
        model.fit((x - self.mean) / self.std, y > 0, sample_weight=w)
        weights = model.coef_[0] / self.std
        self.model = Linear(weights, float(model.intercept_[0] - (self.mean * weights).sum()))
        return self

    def score(self, rows: np.ndarray) -> np.ndarray:
        return self.model.score(rows)

    def export(self) -> dict:
        return {"kind": "linear", "linear": {"weights": self.model.weights.tolist(), "bias": self.model.bias}}


class TreeRanker:
    name = "trees (LambdaRank)"

    def fit(self, conversations: list[dict]) -> TreeRanker:
        import lightgbm

        x, y, sizes, w = matrix(conversations)
        self.booster = (
            lightgbm.LGBMRanker(random_state=SEED, **TREE_PARAMS).fit(x, y, group=sizes, sample_weight=w).booster_
        )
        self.trees = export_trees(self.booster.dump_model())
        sample = x[:: max(1, len(x) // 2000)]
        drift = np.abs(self.trees.score(sample) - self.booster.predict(sample)).max()
        if drift > 1e-6:
            raise SystemExit(f"the exported trees disagree with LightGBM by {drift}")
        return self

    def score(self, rows: np.ndarray) -> np.ndarray:
        return self.trees.score(rows)

    def export(self) -> dict:
        t = self.trees
        return {
            "kind": "trees",
            "trees": {
                "roots": t.roots.tolist(),
                "feature": t.feature.tolist(),
                "threshold": t.threshold.tolist(),
                "left": t.left.tolist(),
                "right": t.right.tolist(),
                "leaf": t.leaf.tolist(),
                "depth": t.depth,
            },
        }


def export_trees(dump: dict) -> Trees:
    """LightGBM's ``dump_model()`` as flat node arrays (learned.Trees)."""
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    leaf: list[float] = []
    roots: list[int] = []
    depth = 0

    def walk(node: dict, level: int) -> int:
        nonlocal depth
        if "leaf_value" in node or "split_feature" not in node:
            leaf.append(float(node.get("leaf_value", 0.0)))
            depth = max(depth, level)
            return ~(len(leaf) - 1)
        if node.get("decision_type", "<=") != "<=":
            raise SystemExit("only numerical splits can be exported")
        at = len(feature)
        feature.append(int(node["split_feature"]))
        threshold.append(float(node["threshold"]))
        left.append(0)
        right.append(0)
        left[at] = walk(node["left_child"], level + 1)
        right[at] = walk(node["right_child"], level + 1)
        return at

    for tree in dump["tree_info"]:
        roots.append(walk(tree["tree_structure"], 0))
    return Trees(
        np.asarray(roots, dtype=np.int64),
        np.asarray(feature, dtype=np.int64),
        np.asarray(threshold, dtype=np.float64),
        np.asarray(left, dtype=np.int64),
        np.asarray(right, dtype=np.int64),
        np.asarray(leaf, dtype=np.float64),
        depth + 1,
    )


def ranking(q: dict, scores: np.ndarray, hand: bool = False) -> np.ndarray:
    """Candidate ids in the ranker's order (messages.MessageRanker): verbatim matches first, then
    the best ``SEARCH_DEPTH`` by score, ties newest first. ``hand``: the hand fusion keeps only
    messages that score above 0, and of those lifted by a neighbour only the strong ones."""
    from memdesk.core.retrieval.messages import NEIGHBOUR_ONLY_FLOOR, SEARCH_DEPTH

    rows = q["rows"]
    exact = rows[:, features.INDEX["exact"]] > 0
    keep = np.ones(len(scores), dtype=bool)
    if hand:
        fused, lift = rows[:, features.INDEX["fused"]], rows[:, features.INDEX["neighbour_lift"]]
        keep = exact | ((fused > 0) & ((fused - lift > 0) | (fused >= NEIGHBOUR_ONLY_FLOOR)))
    order = np.lexsort((-q["ids"], -scores))
    order = order[keep[order]]
    return q["ids"][np.concatenate([order[exact[order]], order[~exact[order]][:SEARCH_DEPTH]])]


#: Automatic recall's section for a question at these windows (agent/recall/budget.py: 0.30 of
#: 8,192 tokens; at 4,096, the 8,192 section as far as the room allows, measured 1,647 tokens).
SECTIONS = {8192: 2457, 4096: 1647}
#: A long message is shown by its matched part (message_parts.PART_CHARS) and a note.
PART_CHARS = 900


def in_section(c: dict, q: dict, ranked: np.ndarray, budget: int) -> bool:
    """Whether every evidence message is in automatic recall's section of ``budget`` tokens when it
    is filled from this ranking (the section alone: nothing of what the window shows counts). A
    token is counted as four characters, a line's date and speaker as 12 tokens, the named
    speaker's memories go first after the others' best five (agent/recall/speaker.py), and no
    memory takes more than 0.4 of the budget, as packing.py fills it."""
    from memdesk.core.agent.recall.speaker import named_speaker_first

    said_by = [c["texts"][int(m)][1] for m in ranked[:100]]
    order = named_speaker_first(q["question"], list(ranked[:100]), said_by, c["speakers"])
    used, shown = 0, set()
    for m in order:
        text = c["texts"][int(m)][0]
        cost = 12 + min(len(text), PART_CHARS) // 4
        if cost > 0.4 * budget or used + cost > budget:
            continue
        used += cost
        shown.add(int(m))
    return set(q["evidence"]) <= shown


def newer_values_first(c: dict, q: dict, ranked: np.ndarray) -> np.ndarray:
    """The ranking as the message ranker returns it: of two values of what the question asks
    among the best hits, the newer first (versions.newer_values_first; ids ascend with time here)."""
    from memdesk.core.retrieval.versions import NEWER_FIRST_DEPTH
    from memdesk.core.retrieval.versions import newer_values_first as reorder

    if not len(ranked):
        return ranked
    exact = dict(zip(q["ids"].tolist(), q["rows"][:, features.INDEX["exact"]] > 0, strict=True))
    head = [int(m) for m in ranked[:NEWER_FIRST_DEPTH] if exact[int(m)] == exact[int(ranked[0])]]
    said = [(*c["texts"][m], m) for m in head]
    return np.concatenate(
        [np.asarray([head[k] for k in reorder(q["question"], said)], dtype=ranked.dtype), ranked[len(head) :]]
    )


def measure(questions: list[tuple[dict, np.ndarray]], texts: dict | None = None) -> dict:
    """recall@10 (and @5, @50) per category, knowledge updates' newer-above-older share, and with
    ``texts`` (question id -> its conversation) the evidence wholly in automatic recall's section,
    each ranking as the app returns it (``newer_values_first``)."""
    table: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    pairs: list[bool] = []
    for q, ranked in questions:
        if not q["evidence"]:
            continue
        if texts is not None:
            ranked = newer_values_first(texts[id(q)], q, ranked)
        place = {int(m): k for k, m in enumerate(ranked)}
        for k in (5, K, 50):
            found = sum(place.get(e, 10**9) < k for e in q["evidence"]) / len(q["evidence"])
            for bucket in ("all", q["category"]):
                table[bucket][f"recall@{k}"].append(found)
        if texts is not None:
            for window, budget in SECTIONS.items():
                shown = in_section(texts[id(q)], q, ranked, budget)
                for bucket in ("all", q["category"]):
                    table[bucket][f"in_section@{window}"].append(shown)
        if q["category"] == "knowledge_update" and len(q["groups"]) == 2:
            for old in q["groups"][0]:
                for new in q["groups"][1]:
                    if old != new:
                        pairs.append(place.get(new, 10**9) < place.get(old, 10**9))
    report: dict = {
        bucket: {**{m: round(float(np.mean(v)), 4) for m, v in row.items()}, "n": len(row[f"recall@{K}"])}
        for bucket, row in table.items()
    }
    if pairs:
        report["newer_above_older"] = {"share": round(float(np.mean(pairs)), 4), "pairs": len(pairs)}
    return report


def judge_rows(c: dict, q: dict, scores: np.ndarray, hand: bool) -> np.ndarray:
    """The judge's input on this ranking's best hits, as the app computes it (the hand fusion's
    scores are its ``fused`` feature, as learned.LearnedScorer.score gives them)."""
    place = {int(m): k for k, m in enumerate(q["ids"])}
    order = np.asarray([place[int(m)] for m in ranking(q, scores, hand)[:10]], dtype=np.int64)
    hits = [c["texts"][int(m)] for m in q["ids"][order]]
    judged = support(q["question"], hits, c["speakers"])
    return judge_features(judged, q["rows"][order].reshape(-1, len(features.FEATURES)), scores[order])


def fit_judge(x: np.ndarray, y: np.ndarray):
    from sklearn.linear_model import LogisticRegression

    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
    model = LogisticRegression(C=0.5, max_iter=4000, class_weight="balanced").fit((x - mean) / std, y)
    weights = model.coef_[0] / std
    return weights, float(model.intercept_[0] - (mean * weights).sum())


def _probability(x: np.ndarray, weights: np.ndarray, bias: float) -> np.ndarray:
    return 1 / (1 + np.exp(-np.clip(x @ weights + bias, -50, 50)))


def judge_report(p: np.ndarray, y: np.ndarray, bar) -> dict:
    """``bar``: one probability, or an array of one per question."""
    found = auroc(list(-p[~y]), list(-p[y]))  # answerable should score higher support (lower p)
    bar = np.broadcast_to(np.asarray(bar, dtype=np.float64), p.shape)
    return {
        "auroc": None if found is None else round(found, 4),
        "answerable": int((~y).sum()),
        "unanswerable": int(y.sum()),
        "nothing_for_answerable": round(float((p[~y] > bar[~y]).mean()), 4) if (~y).any() else None,
        "nothing_for_unanswerable": round(float((p[y] > bar[y]).mean()), 4) if y.any() else None,
    }


def run(folder: Path, write: Path | None, makers: tuple = ()) -> dict:
    """``makers``: the rankers compared, the hand fusion first (default: it, linear and trees)."""
    conversations = load(folder)
    dev = [c for c in conversations if c["set"] != "beam_held_out"]
    held = [c for c in conversations if c["set"] == "beam_held_out"]
    groups = [g for g in folds(conversations) if g]
    present = sorted({c["set"] for c in dev})
    makers = makers or (HandFusion, LinearRanker, TreeRanker)
    report: dict = {
        "folds": groups,
        "held_out": [_name(c) for c in held],
        "cross_validated": {},
        "held_out_figures": {},
    }
    oof: dict[str, dict[tuple[str, int], np.ndarray]] = {m.name: {} for m in makers}
    seconds: dict[str, float] = defaultdict(float)
    for fold in groups:
        train = [c for c in dev if _name(c) not in fold]
        test = [c for c in dev if _name(c) in fold]
        for maker in makers:
            started = time.perf_counter()
            model = maker().fit(train)
            seconds[maker.name] += time.perf_counter() - started
            for c in test:
                for n, q in enumerate(c["questions"]):
                    oof[maker.name][(_name(c), n)] = model.score(q["rows"].astype(np.float64))
    owner = {id(q): c for c in conversations for q in c["questions"]}
    for maker in makers:
        scores = oof[maker.name]
        report["cross_validated"][maker.name] = {
            s: measure(
                [
                    (q, ranking(q, scores[(_name(c), n)], maker is HandFusion))
                    for c in dev
                    if c["set"] == s
                    for n, q in enumerate(c["questions"])
                ],
                owner,
            )
            for s in present
        }
    final = {}
    for maker in makers:
        started = time.perf_counter()
        final[maker.name] = maker().fit(dev)
        seconds[maker.name] += time.perf_counter() - started
        report["held_out_figures"][maker.name] = measure(
            [
                (q, ranking(q, final[maker.name].score(q["rows"].astype(np.float64)), maker is HandFusion))
                for c in held
                for q in c["questions"]
            ],
            owner,
        )
    report["training_seconds"] = {k: round(v, 1) for k, v in seconds.items()}

    # the chosen ranker: the better learned one on the cross-validated development figures
    def dev_recall(name: str) -> float:
        cv = report["cross_validated"][name]
        return float(np.mean([cv[s]["all"][f"recall@{K}"] for s in present]))

    chosen = max((m.name for m in makers[1:]), key=dev_recall)
    report["chosen"] = chosen
    hand = report["held_out_figures"][HandFusion.name]["all"][f"recall@{K}"] if held else None
    learned = report["held_out_figures"][chosen]["all"][f"recall@{K}"] if held else None
    report["beats_hand_fusion_held_out"] = held and learned > hand
    # What ranks in the app: the chosen model if it beat the hand fusion on the held-out chats,
    # else the hand fusion (issue 34). The judge is trained on that ranking's hits.
    ships = chosen if report["beats_hand_fusion_held_out"] else HandFusion.name
    report["ranks_in_the_app"] = ships
    is_hand = ships == HandFusion.name
    x, y, where = [], [], []
    for c in dev:
        for n, q in enumerate(c["questions"]):
            x.append(judge_rows(c, q, oof[ships][(_name(c), n)], is_hand))
            y.append(q["unanswerable"])
            where.append((c["set"], _name(c)))
    x_dev, y_dev = np.asarray(x), np.asarray(y, dtype=bool)
    p_dev = np.zeros(len(y_dev))
    for fold in groups:
        test = np.asarray([w[1] in fold for w in where])
        weights, bias = fit_judge(x_dev[~test], y_dev[~test])
        p_dev[test] = _probability(x_dev[test], weights, bias)
    sets = np.asarray([w[0] for w in where])
    # one bar for questions that name a speaker, one for the others (automatic recall reads the
    # one that fits): each says "nothing" for at most FLAGGED_ANSWERABLE of the answerable ones
    named_dev = x_dev[:, JUDGE_FEATURES.index("q_names_speaker")] > 0

    def bar(named: bool) -> float:
        groups = [(sets == s) & ~y_dev & (named_dev == named) for s in present]
        groups = [g for g in groups if g.sum() >= 10] or [~y_dev]  # too few to say: all answerable alike
        return max(float(np.quantile(p_dev[g], 1 - FLAGGED_ANSWERABLE, method="higher")) for g in groups)

    bars = [bar(False), bar(True)]
    weights, bias = fit_judge(x_dev, y_dev)

    def bar_of(x: np.ndarray) -> np.ndarray:
        return np.where(x[:, JUDGE_FEATURES.index("q_names_speaker")] > 0, bars[1], bars[0])

    x_held = np.asarray(
        [
            judge_rows(c, q, final[ships].score(q["rows"].astype(np.float64)), is_hand)
            for c in held
            for q in c["questions"]
        ]
    ).reshape(-1, len(JUDGE_FEATURES))
    y_held = np.asarray([q["unanswerable"] for c in held for q in c["questions"]], dtype=bool)
    report["judge"] = {
        "on_the_ranking_of": ships,
        "bars": [round(b, 4) for b in bars],
        "cross_validated": {
            s: judge_report(p_dev[sets == s], y_dev[sets == s], bar_of(x_dev[sets == s])) for s in present
        },
        "held_out": judge_report(_probability(x_held, weights, bias), y_held, bar_of(x_held)) if held else None,
        "support_alone": {s: judge_report(-x_dev[sets == s, 0], y_dev[sets == s], 0.0) for s in present}
        | ({"held_out": judge_report(-x_held[:, 0], y_held, 0.0)} if held else {}),
    }
    if write is not None and held:
        ranker = final[ships].export() if not is_hand else {"kind": "fusion"}
        document = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "name": f"ranker-{time.strftime('%Y%m%d')}-{ranker['kind']}",
            "features": list(features.FEATURES),
            **ranker,
            "judge": {"features": list(JUDGE_FEATURES), "weights": weights.tolist(), "bias": bias, "bars": bars},
            "card": {
                "trained_on": [_name(c) for c in dev],
                "cross_validation": f"{FOLDS} folds by conversation",
                "held_out": [_name(c) for c in held],
                "ranks": ships,
                "best_learned_ranker": chosen,
                "recall@10": {
                    **{f"{s}_cv": report["cross_validated"][chosen][s]["all"][f"recall@{K}"] for s in present},
                    "beam_held_out": learned,
                    "beam_held_out_hand_fusion": hand,
                },
                "nothing_judge_auroc": {
                    **{f"{s}_cv": report["judge"]["cross_validated"][s]["auroc"] for s in present},
                    "beam_held_out": report["judge"]["held_out"]["auroc"],
                },
            },
        }
        parse(document)  # the app can read what is written
        write.write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")
        report["written"] = str(write)
    return report


def write_fixture(folder: Path, target: Path, per_chat: int = 4) -> dict:
    """A few held-out questions' candidates (feature rows, labels, ids; no text) for the test that
    the shipped model ranks them at least as well as the hand fusion (tests/retrieval)."""
    held = [c for c in load(folder) if c["set"] == "beam_held_out"]
    chosen = []
    for c in held:
        answerable = [q for q in _answerable(c) if (q["labels"] > 0).any()]
        step = max(1, len(answerable) // per_chat)
        chosen += answerable[::step][:per_chat]
    arrays: dict[str, np.ndarray] = {}
    for n, q in enumerate(chosen):
        arrays[f"rows_{n}"] = q["rows"].astype(np.float32)
        arrays[f"ids_{n}"] = q["ids"].astype(np.int32)
        arrays[f"labels_{n}"] = q["labels"].astype(np.int8)
        arrays[f"evidence_{n}"] = np.asarray(q["evidence"], dtype=np.int32)
    np.savez_compressed(target, count=np.asarray(len(chosen)), features=np.asarray(features.FEATURES), **arrays)
    return {"fixture": str(target), "questions": len(chosen), "bytes": target.stat().st_size}


def write_judge_fixture(folder: Path, model: Path, target: Path) -> dict:
    """Every held-out question's input to the judge (no text: support.py's score and the features
    of the best hits, as the model file's ranking orders them), with whether memory can answer it,
    for the test that the shipped judge tells BEAM's abstentions apart (tests/retrieval)."""
    from memdesk.core.retrieval.learned import load as load_model

    scorer = load_model(model)
    held = [c for c in load(folder) if c["set"] == "beam_held_out"]
    x = [
        judge_rows(c, q, scorer.score(q["rows"].astype(np.float64)), not scorer.ranks)
        for c in held
        for q in c["questions"]
    ]
    y = [q["unanswerable"] for c in held for q in c["questions"]]
    np.savez_compressed(
        target, features=np.asarray(JUDGE_FEATURES), x=np.asarray(x, dtype=np.float64), unanswerable=np.asarray(y)
    )
    return {"judge_fixture": str(target), "questions": len(y), "bytes": target.stat().st_size}


def main(argv: list[str] | None = None) -> int:
    global BEAM_WEIGHT
    parser = bench_parser(__doc__)
    parser.add_argument("--data", type=Path, required=True, help="bench.ranker_data's folder")
    parser.add_argument("--write", type=Path, help="the model file to write (memdesk/resources/ranker.json)")
    parser.add_argument("--fixture", type=Path, help="also write a few held-out questions' candidates here (.npz)")
    parser.add_argument("--judge-fixture", type=Path, help="write the held-out judge inputs of --write's model (.npz)")
    parser.add_argument("--beam-weight", type=float, default=BEAM_WEIGHT, help="a BEAM question's weight in training")
    args = parser.parse_args(argv)
    BEAM_WEIGHT = args.beam_weight
    report = run(args.data, args.write)
    if args.fixture:
        report["fixture"] = write_fixture(args.data, args.fixture)
    if args.judge_fixture and args.write:
        report["judge_fixture"] = write_judge_fixture(args.data, args.write, args.judge_fixture)
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
