"""The dense leg's scan against exact search: the same top 10 on clustered vectors, recall@10 of
at least 0.99 on real MiniLM vectors of real text (this repository's own documentation, grown with
small noise as bench.dense_recall grows LoCoMo and BEAM), and the bench's report at a tiny size."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from bench import dense_recall, realtext
from bench.scale import Corpus
from memdesk.core.retrieval import VectorIndex
from memdesk.core.storage import open_database

ROOT = Path(__file__).resolve().parents[2]


def _top(path: Path, queries: np.ndarray) -> list[list[int]]:
    db = open_database(path)
    try:
        index = VectorIndex(db)
        return [(index.top_k("passages", 1, q, 10)[0] - 1).tolist() for q in queries]
    finally:
        db.close()


def test_the_scan_returns_the_exact_top_ten_on_clustered_vectors(tmp_path):
    corpus = Corpus(3, topics=200)
    vectors, _ = corpus.vectors(30_000)  # far beyond the short list: the sign bits choose
    queries, _ = corpus.vectors(20)
    dense_recall.fill(tmp_path / "s.sqlite3", vectors)
    for query, found in zip(queries, _top(tmp_path / "s.sqlite3", queries), strict=True):
        exact = np.argsort(-(vectors @ query), kind="stable")[:10]
        assert sorted(found) == sorted(exact.tolist())
        assert found[0] == exact[0]


def _sentences() -> list[str]:
    """Real prose: the sentences of this repository's README, documentation and prompts."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "memdesk").rglob("*.txt"))]
    found: list[str] = []
    for path in files:
        text = " ".join(path.read_text(encoding="utf-8").split())
        found.extend(s for s in re.split(r"(?<=[.!?])\s+", text) if 40 <= len(s) <= 400 and "|" not in s)
    return list(dict.fromkeys(found))


def test_recall_at_ten_on_real_text_embeddings_is_at_least_0_99(tmp_path, real_embedder):
    sentences = _sentences()
    assert len(sentences) >= 150
    rng = np.random.default_rng(0)
    asked = set(rng.choice(len(sentences), 40, replace=False).tolist())
    vectors = real_embedder.embed([s for i, s in enumerate(sentences) if i not in asked])
    queries = real_embedder.embed([sentences[i] for i in sorted(asked)])
    grown = realtext.grow(vectors, 30_000)
    dense_recall.fill(tmp_path / "s.sqlite3", grown)
    recalls = []
    for query, found in zip(queries, _top(tmp_path / "s.sqlite3", queries), strict=True):
        exact = set(np.argsort(-(grown @ query))[:10].tolist())
        recalls.append(len(exact & set(found)) / 10)
    assert np.mean(recalls) >= 0.99


def test_the_bench_reports_real_text_and_uniform_random_figures(tmp_path):
    rng = np.random.default_rng(1)
    base = rng.standard_normal((300, 384)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    report = dense_recall.run(base, base[:20], [2000], queries=5, workdir=tmp_path)
    figures = report["sizes"]["2000"]
    for kind in ("real_text", "uniform_random"):
        assert set(figures[kind]) >= {"recall_at_10_vs_exact", "search_p50_ms", "numpy_p50_ms", "search_p50_vs_numpy"}
        assert 0.0 <= figures[kind]["recall_at_10_vs_exact"] <= 1.0
    assert report["queries"] == 5 and list(tmp_path.iterdir()) == []
