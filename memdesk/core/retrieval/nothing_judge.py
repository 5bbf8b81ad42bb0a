""" "Nothing on that", learned: whether the best hits answer the question at all.

support.py's score (the share of the asked words one best hit tells, the named speaker's minus
another speaker's) tells LoCoMo's adversarial questions from answerable ones, but not BEAM's
abstention questions, which ask for a detail of a topic the chat does discuss. The judge is a
logistic regression over that score and the learned ranking's view of its best hits (how high
and how far apart they score, how close in meaning the best are, whose they are) and the
question's shape; trained with the ranker by ``python -m bench.train_ranker`` on the development
data, and shipped in the same model file. Its output is a support-like number: below 0, nothing
clearly answers (the same bar automatic recall's note reads).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memdesk.core.retrieval.features import INDEX

#: Hits read, best first (as support.py).
DEPTH = 10

JUDGE_FEATURES = (
    "support",
    "top_score",
    "gap",  # the best hit's learned score less the DEPTH-th's
    "mean_score",
    "top_lexical",
    "top_cosine",
    "best_cosine",
    "mean_cosine",
    "lexical_matches",  # share of the hits that match any asked word
    "named_share",  # share of the hits said by the speaker the question names
    "asker_share",
    "q_names_speaker",
    "q_about_oneself",
    "q_terms",
    "q_quantity",
    "q_yes_no",
    "q_size",
    # LoCoMo's unanswerable questions name a speaker, BEAM's never: each signal apart for each kind
    "support_when_named",
    "gap_when_unnamed",
    "top_margin",  # the best hit's learned score less the second's
)


def judge_features(support: float, rows: np.ndarray, scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """The judge's input from support.py's score, the best hits' feature rows (FEATURES, best
    first) and their learned scores."""
    rows = np.asarray(rows, dtype=np.float64)[:DEPTH]
    values = np.asarray(scores, dtype=np.float64)[:DEPTH]
    out = np.zeros(len(JUDGE_FEATURES))
    out[0] = support
    if len(values):
        cosine = rows[:, INDEX["cosine"]]
        out[1:] = (
            values[0],
            values[0] - values[-1],
            values.mean(),
            rows[0, INDEX["lexical"]],
            rows[0, INDEX["cosine"]],
            cosine.max(),
            cosine.mean(),
            rows[:, INDEX["lexical_match"]].mean(),
            rows[:, INDEX["named_speaker"]].mean(),
            rows[:, INDEX["asker"]].mean(),
            rows[0, INDEX["q_names_speaker"]],
            rows[0, INDEX["q_about_oneself"]],
            rows[0, INDEX["q_terms"]],
            rows[0, INDEX["q_quantity"]],
            rows[0, INDEX["q_yes_no"]],
            rows[0, INDEX["q_size"]],
            support * rows[0, INDEX["q_names_speaker"]],
            (values[0] - values[-1]) * (1 - rows[0, INDEX["q_names_speaker"]]),
            values[0] - values[1] if len(values) > 1 else 0.0,
        )
    return out


@dataclass(frozen=True)
class NothingJudge:
    """p(nothing answers) = sigmoid(features . weights + bias); ``bars``: the probability above
    which the judge says so, for a question that names no speaker and for one that names one
    (each chosen on the development data: at most a tenth of answerable questions above it; a
    question about one speaker is judged mostly by who said what, and the two kinds' probabilities
    are not on one scale)."""

    weights: np.ndarray
    bias: float
    bars: tuple[float, float]

    @classmethod
    def parse(cls, spec: dict) -> NothingJudge:
        if tuple(spec["features"]) != JUDGE_FEATURES:
            raise ValueError("the judge was trained on other features")
        weights = np.asarray(spec["weights"], dtype=np.float64)
        bars = tuple(float(b) for b in spec["bars"])
        if weights.shape != (len(JUDGE_FEATURES),) or len(bars) != 2:
            raise ValueError("the judge's weights or bars do not match its features")
        return cls(weights, float(spec["bias"]), (bars[0], bars[1]))

    def bar(self, features: np.ndarray) -> float:
        return self.bars[1] if features[JUDGE_FEATURES.index("q_names_speaker")] > 0 else self.bars[0]

    def probability(self, features: np.ndarray) -> float:
        z = float(np.asarray(features, dtype=np.float64) @ self.weights + self.bias)
        return float(1.0 / (1.0 + np.exp(-np.clip(z, -50, 50))))

    def support(self, features: np.ndarray) -> float:
        """Support-like: the bar less the probability, so that below 0 means "nothing on that"."""
        return self.bar(features) - self.probability(features)
