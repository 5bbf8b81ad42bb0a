"""The learned scorer: a small model file, read and evaluated with NumPy alone.

``python -m bench.train_ranker`` trains it (LightGBM's LambdaRank or a linear model, on the
development data only; its data card is docs/ranker.md) and writes ``memdesk/resources/ranker.json``:
the feature names it reads (memdesk.core.retrieval.features); gradient-boosted trees as flat
node arrays, a linear model's weights, or ``"kind": "fusion"``: no ranking model, the hand fusion
ranks (what the training script writes when no learned ranker beat the fusion on the held-out
chats); and the "nothing on that" judge (memdesk.core.retrieval.nothing_judge), trained on the
rankings the file's kind gives. No training library is needed to use it. A file made for another
list of features, or in another format, is refused: the hand fusion then ranks, judged by
support.py's score.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from memdesk.core.retrieval.features import FEATURES

log = logging.getLogger("memdesk.retrieval.learned")

FORMAT = "memdesk-ranker"
FORMAT_VERSION = 1
SHIPPED = "ranker.json"


class ModelFormatError(ValueError):
    """A model file this version cannot use (another format, version or feature list)."""


@dataclass(frozen=True)
class Trees:
    """Every tree's nodes in flat arrays. A child index ``c >= 0`` is an internal node; ``c < 0``
    is the leaf ``~c``. A sample goes left when its feature is <= the threshold (LightGBM's rule)."""

    roots: np.ndarray  # (trees,) a root node, or ~leaf for a single-leaf tree
    feature: np.ndarray  # (nodes,)
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    leaf: np.ndarray  # (leaves,) values
    depth: int

    def score(self, x: np.ndarray) -> np.ndarray:
        """Every (sample, tree) pair walks down at once, one level per step; pairs that reached a
        leaf drop out, so a step costs what is still walking (most trees are shallower than the
        deepest). 150 trees of 15 leaves over 1,000 candidates: a few milliseconds."""
        n, trees = x.shape[0], self.roots.size
        flat = np.ascontiguousarray(x, dtype=np.float64).ravel()
        node = np.tile(self.roots, n)  # pair k: sample k // trees, tree k % trees
        base = np.repeat(np.arange(n, dtype=np.int64) * x.shape[1], trees)
        walking = np.flatnonzero(node >= 0)
        for _ in range(self.depth):
            if not walking.size:
                break
            at = node[walking]
            left = flat[base[walking] + self.feature[at]] <= self.threshold[at]
            at = np.where(left, self.left[at], self.right[at])
            node[walking] = at
            walking = walking[at >= 0]
        return self.leaf[~node].reshape(n, trees).sum(axis=1)


@dataclass(frozen=True)
class Linear:
    weights: np.ndarray
    bias: float

    def score(self, x: np.ndarray) -> np.ndarray:
        return x @ self.weights + self.bias


@dataclass(frozen=True)
class LearnedScorer:
    """Scores candidates from their feature rows (higher is better)."""

    name: str
    model: Trees | Linear | None  # None: the hand fusion ranks (the file's kind is "fusion")
    card: dict  # what it was trained on and its figures (the data card's summary)
    judge: Any = None  # memdesk.core.retrieval.nothing_judge.NothingJudge, when the file has one

    @property
    def ranks(self) -> bool:
        """Whether a learned model ranks (else the hand fusion does, and only the judge is learned)."""
        return self.model is not None

    def nothing_support(self, support: float, rows: np.ndarray) -> float | None:
        """The judge's support-like score (below 0: nothing clearly answers) from support.py's
        score and the best hits' feature rows, best first; None without a judge."""
        from memdesk.core.retrieval.nothing_judge import judge_features

        if self.judge is None or not len(rows):
            return None
        # in the ranking's own order (verbatim matches, then by score), as it was trained: the
        # newer of two values may have been placed above an older, better-scored one
        scores = self.score(rows)
        order = np.lexsort((-scores, -np.asarray(rows)[:, FEATURES.index("exact")]))
        return self.judge.support(judge_features(support, np.asarray(rows)[order], scores[order]))

    def score(self, features: np.ndarray) -> np.ndarray:
        """The candidates' scores, higher is better: the model's, or the hand fusion's own."""
        if not features.shape[0]:
            return np.zeros(0)
        rows = np.asarray(features, dtype=np.float64)
        return self.model.score(rows) if self.model is not None else rows[:, FEATURES.index("fused")]


def _trees(spec: dict) -> Trees:
    arrays = {
        key: np.asarray(spec[key], dtype=np.float64 if key in ("threshold", "leaf") else np.int64)
        for key in ("roots", "feature", "threshold", "left", "right", "leaf")
    }
    nodes, leaves = arrays["feature"].size, arrays["leaf"].size
    children = np.concatenate([arrays["roots"], arrays["left"], arrays["right"]])
    if (
        any(arrays[k].size != nodes for k in ("threshold", "left", "right"))
        or (children >= nodes).any()
        or (~children[children < 0] >= leaves).any()
        or ((arrays["feature"] < 0) | (arrays["feature"] >= len(FEATURES))).any()
    ):
        raise ModelFormatError("the trees' node arrays do not fit together")
    return Trees(depth=int(spec["depth"]), **arrays)


def parse(document: dict) -> LearnedScorer:
    """A scorer from a model file's JSON; ``ModelFormatError`` when this version cannot use it."""
    from memdesk.core.retrieval.nothing_judge import NothingJudge

    if document.get("format") != FORMAT or document.get("version") != FORMAT_VERSION:
        raise ModelFormatError(f"not a {FORMAT} file of version {FORMAT_VERSION}")
    if tuple(document.get("features", ())) != FEATURES:
        raise ModelFormatError("trained on other features than this version computes")
    try:
        kind = document["kind"]
        model: Trees | Linear | None = None
        if kind == "trees":
            model = _trees(document["trees"])
        elif kind == "linear":
            weights = np.asarray(document["linear"]["weights"], dtype=np.float64)
            if weights.shape != (len(FEATURES),):
                raise ModelFormatError("the linear model's weights do not match the features")
            model = Linear(weights, float(document["linear"]["bias"]))
        elif kind != "fusion":
            raise ModelFormatError(f"unknown model kind {kind!r}")
        judge = NothingJudge.parse(document["judge"]) if document.get("judge") else None
    except (KeyError, TypeError, ValueError) as error:
        if isinstance(error, ModelFormatError):
            raise
        raise ModelFormatError(f"malformed model file: {error}") from error
    return LearnedScorer(str(document.get("name", "")), model, dict(document.get("card", {})), judge)


def load(path: Path) -> LearnedScorer:
    return parse(json.loads(Path(path).read_text(encoding="utf-8")))


def shipped() -> LearnedScorer | None:
    """The model shipped in memdesk/resources, or None when there is none or it cannot be used
    (logged: the hand fusion ranks instead, as before there was a model)."""
    try:
        text = resources.files("memdesk.resources").joinpath(SHIPPED).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        return parse(json.loads(text))
    except (ModelFormatError, ValueError) as error:
        log.warning("the shipped ranking model cannot be used (%s): the hand fusion ranks", error)
        return None
