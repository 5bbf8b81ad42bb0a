"""A tiny run of the index candidates benchmark (the figures behind the index's design come from
`python -m bench.vector_candidates --n 100000 --json`; nothing is timed here)."""

from __future__ import annotations

import json
import sys

import numpy as np

from bench import vector_candidates


def test_the_candidates_are_measured_against_exact_search_on_clustered_vectors(monkeypatch, capsys):
    vectors = vector_candidates.clustered(np.random.default_rng(0), 3000, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar = vectors[:300] @ vectors.T
    similar[np.arange(300), np.arange(300)] = -1
    # topics, not uniform noise: each vector has close neighbours (random 384-d ones stay near 0.2)
    assert float(np.median(similar.max(axis=1))) > 0.35
    monkeypatch.setattr(
        sys,
        "argv",
        ["vector_candidates", "--n", "1500", "--queries", "5", "--only", "numpy,binary,sqlite_vec_bit", "--json"],
    )
    vector_candidates.main()
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == 1500 and "numpy_exact" in report
    assert 0.0 <= report["binary_rescore_200"]["recall_at_10"] <= 1.0
    assert report["sqlite_vec_bit_rescore_1000"]["recall_at_10"] == 1.0  # the whole store fits the short list
