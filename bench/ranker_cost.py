"""What the learned ranker costs per search: its features and its scoring of 1,000 candidates.

    python -m bench.ranker_cost --json [--candidates 1000] [--runs 200] [--model ranker.json]

The shipped model (memdesk/resources/ranker.json) scores ``--candidates`` feature rows (drawn
from the ranges the features take) ``--runs`` times; the features of as many candidates are
computed from synthetic legs over a 10,000-message timeline, as the ranker computes them. Issue
34's bound is 10 ms for scoring 1,000 candidates. On a loaded machine the milliseconds move with
the load, so each scoring run alternates with a reference of fixed work, the dense leg's pass over
10,000 vectors (a 10,000 x 384 product), and the ratio of the two is the figure to compare
(``score_to_dense_pass``); the hand fusion's own arithmetic over the timeline is timed too.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bench.common import bench_parser, percentile
from bench.report import emit
from memdesk.core.retrieval import features, fusion, learned

TIMELINE = 10_000


def _timed(call, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    return out


def run(candidates: int, runs: int, model: Path | None = None) -> dict:
    scorer = learned.load(model) if model else learned.shipped()
    if scorer is None:
        raise SystemExit("no usable model in memdesk/resources/ranker.json")
    rng = np.random.default_rng(34)
    n = TIMELINE
    lexical = np.where(rng.random(n) < 0.05, rng.random(n), 0.0)
    cosine = rng.normal(0.2, 0.1, n)
    centred = fusion.centre_cosine(cosine)
    fused = fusion.weighted_sum(lexical, centred, 0.8)
    legs = features.Legs(
        lexical=lexical, cosine=cosine, centred=centred, lift=np.zeros(n), graph=None, dates=None, fused=fused,
        exact=np.zeros(n, dtype=bool), named=rng.random(n) < 0.5, asker=None, about_oneself=False, has_date=False,
    )  # fmt: skip
    same = rng.random(n) < 0.9
    times = np.cumsum(rng.random(n) * 600)
    lengths = rng.integers(10, 3000, n)
    vectors = rng.normal(size=(n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    positions = np.sort(rng.choice(n, candidates, replace=False))

    def compute() -> np.ndarray:
        return features.candidate_features(
            "How many commits have I merged into main by now?",
            legs,
            positions,
            same_session=same,
            times=times,
            lengths=lengths,
            parts=np.ones(candidates),
            vectors=lambda p: vectors[p],
        )

    rows = compute()
    features_ms = _timed(compute, runs)
    query = vectors[0].copy()
    score_ms, dense_ms = [], []
    for _ in range(runs):  # interleaved: whatever else loads the machine weighs on both alike
        score_ms += _timed(lambda: scorer.score(rows), 1)
        dense_ms += _timed(lambda: vectors @ query, 1)
    fusion_ms = _timed(lambda: fusion.neighbour_boost(fusion.weighted_sum(lexical, centred, 0.8), same, 0.6), runs)
    return {
        "model": scorer.name,
        "kind": type(scorer.model).__name__.lower() if scorer.model is not None else "fusion",
        "candidates": candidates,
        "runs": runs,
        "score_ms_p50": round(statistics.median(score_ms), 3),
        "score_ms_p95": round(percentile(score_ms, 0.95), 3),
        "features_ms_p50": round(statistics.median(features_ms), 3),
        "features_ms_p95": round(percentile(features_ms, 0.95), 3),
        "hand_fusion_ms_p50": round(statistics.median(fusion_ms), 3),
        "dense_pass_ms_p50": round(statistics.median(dense_ms), 3),
        "score_to_dense_pass": round(statistics.median(score_ms) / max(statistics.median(dense_ms), 1e-6), 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--model", type=Path, help="another model file (bench.train_ranker --write's)")
    args = parser.parse_args(argv)
    emit(run(args.candidates, args.runs, args.model), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
