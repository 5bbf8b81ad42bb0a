"""Retrieval quality with the peers' recipes: LoCoMo and BEAM's development chats, one embedder
(MemDesk's bundled all-MiniLM-L6-v2) for everyone, each app's ranking recipe against MemDesk's
conversation search: recall@10 of the evidence messages.

    python -m bench.peers_quality --locomo ../shared/data/locomo/locomo_dev.json \\
        --beam BEAM/chats/100K/1 ... BEAM/chats/100K/10 --json

Every recipe ranks the same units MemDesk stores, one per message, embedded from the same text
("speaker: words", recall.embedding_text), and each conversation is its own collection, so what
differs is the recipe, not the model or the chunking. The recipes (bench/peer_engines.py cites the
code each is read from):

* ``vector_only``: the k nearest by cosine. AnythingLLM's default (LanceDB flat search) and Jan's
  (sqlite-vec, L2 on unit vectors: the same order).
* ``openwebui_hybrid``: BM25 (LangChain's BM25Retriever: rank_bm25's BM25Okapi, k1 1.5, b 0.75,
  words split on white space) top k and the vector top k, fused by LangChain's EnsembleRetriever
  (weighted reciprocal rank, c = 60, BM25 weight 0.5), then ordered by the RerankCompressor, which
  without a reranking model (the default) sorts them by the query's cosine with each document.
* ``gpt4all_hybrid``: GPT4All's FTS5 BM25 (porter tokenizer; the question as a phrase, else its
  words without stop words) and exact k-NN, fused by its weighted reciprocal rank.
* ``memdesk``: MemDesk's own conversation search, as ``memdesk eval locomo`` / ``eval beam`` run it
  (fused, no knowledge graph).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench import realtext
from bench.common import bench_parser
from bench.peer_engines import fts_queries, gpt4all_bm25_weight, rrf_fuse
from memdesk.core.evaluation import beam
from memdesk.core.evaluation.locomo import TUNING_CONVERSATIONS, category_name, evaluate_samples, turn_text
from memdesk.core.memory.recall import embedding_text

K = 10
RECIPES = ("vector_only", "openwebui_hybrid", "gpt4all_hybrid")
#: LangChain's EnsembleRetriever constant and Open WebUI's default BM25 weight (HYBRID_BM25_WEIGHT).
ENSEMBLE_C = 60
OPENWEBUI_BM25_WEIGHT = 0.5


class CachingEmbedder:
    """MemDesk's embedder with every vector kept by text (and on disk in ``cache``): MemDesk's
    search and the recipes embed the same texts once."""

    def __init__(self, inner, cache: Path | None) -> None:
        self._inner = inner
        self._cache = cache

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return realtext.embed_cached(list(texts), self._cache, self._inner)


class BM25Okapi:
    """rank_bm25's BM25Okapi (what LangChain's BM25Retriever uses): negative IDFs are replaced by
    a quarter of the average IDF."""

    def __init__(self, documents: list[list[str]], k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25) -> None:
        self.k1, self.b = k1, b
        self.frequencies = [Counter(d) for d in documents]
        self.lengths = np.array([len(d) for d in documents], dtype=np.float64)
        self.average = float(self.lengths.mean()) if len(documents) else 0.0
        containing = Counter(w for d in self.frequencies for w in d)
        n = len(documents)
        idf = {w: math.log(n - c + 0.5) - math.log(c + 0.5) for w, c in containing.items()}
        floor = epsilon * (sum(idf.values()) / len(idf)) if idf else 0.0
        self.idf = {w: (v if v >= 0 else floor) for w, v in idf.items()}

    def scores(self, query: list[str]) -> np.ndarray:
        out = np.zeros(len(self.frequencies))
        norm = self.k1 * (1 - self.b + self.b * self.lengths / max(self.average, 1e-9))
        for word in query:
            tf = np.array([f.get(word, 0) for f in self.frequencies], dtype=np.float64)
            out += self.idf.get(word, 0.0) * tf * (self.k1 + 1) / (tf + norm)
        return out

    def top(self, query: list[str], k: int) -> list[int]:
        return np.argsort(self.scores(query))[::-1][:k].tolist()  # rank_bm25's get_top_n order


def _units(sample: dict) -> tuple[list[str], list[str]]:
    """A conversation's messages as MemDesk embeds them: (dia ids, texts)."""
    ids, texts = [], []
    conversation = sample["conversation"]
    number = 1
    while f"session_{number}" in conversation:
        for turn in conversation[f"session_{number}"]:
            ids.append(str(turn["dia_id"]))
            texts.append(embedding_text(turn_text(turn), turn["speaker"]))
        number += 1
    return ids, texts


def _fts(texts: list[str]):
    """GPT4All's FTS5 table over these texts (in memory), rowid = position + 1."""
    from memdesk.core.storage.driver import sqlite_module

    conn = sqlite_module().connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(chunk_text, tokenize='porter')")
    conn.executemany(
        "INSERT INTO chunks_fts(rowid, chunk_text) VALUES (?, ?)", [(i + 1, t) for i, t in enumerate(texts)]
    )
    return conn


def recipe_rankings(texts: list[str], vectors: np.ndarray, question: str, query: np.ndarray, fts, bm25) -> dict:
    """Each recipe's top K positions (into ``texts``) for one question."""
    cosine = vectors @ query
    dense = np.argsort(-cosine, kind="stable")[:K].tolist()
    # Open WebUI: ensemble of BM25 and vector top K by weighted reciprocal rank, then the cosine sort
    fused: dict[int, float] = defaultdict(float)
    for weight, ranking in ((OPENWEBUI_BM25_WEIGHT, bm25.top(question.split(), K)), (1 - OPENWEBUI_BM25_WEIGHT, dense)):
        for rank, item in enumerate(ranking, start=1):
            fused[item] += weight / (rank + ENSEMBLE_C)
    ensemble = sorted(fused, key=lambda i: -fused[i])
    openwebui = sorted(ensemble, key=lambda i: -cosine[i])[:K]
    # GPT4All: FTS5 BM25 (phrase first), exact k-NN, the BM25 hits the k-NN lacks scored, then RRF
    lexical, phrase = [], False
    for expression, is_phrase in fts_queries(question):
        try:
            rows = fts.execute(
                "SELECT rowid, bm25(chunks_fts) AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
                " ORDER BY score LIMIT ?",
                (expression, K),
            ).fetchall()
        except Exception:  # noqa: BLE001 - a question FTS5 cannot parse: GPT4All logs it and finds nothing
            rows = []
        if rows:
            lexical, phrase = [int(r[0]) - 1 for r in rows], is_phrase
            break
    extended = dense + sorted((i for i in lexical if i not in dense), key=lambda i: -cosine[i])
    gpt4all = rrf_fuse(extended, lexical, gpt4all_bm25_weight(question, phrase) if lexical else 0.0)
    return {"vector_only": dense, "openwebui_hybrid": openwebui, "gpt4all_hybrid": gpt4all}


def _score(samples: list[dict], embedder, tuned_on: Sequence[str]) -> dict:
    sums: dict[str, dict[str, list[float]]] = {r: defaultdict(list) for r in RECIPES}
    for sample in samples:
        ids, texts = _units(sample)
        position = {d: i for i, d in enumerate(ids)}
        vectors = embedder.embed(texts)
        fts, bm25 = _fts(texts), BM25Okapi([t.split() for t in texts])
        questions = [qa for qa in sample["qa"] if any(str(e) in position for e in qa.get("evidence", []))]
        queries = embedder.embed([qa["question"] for qa in questions]) if questions else []
        group = "tuned" if sample["sample_id"] in tuned_on else "held_out"
        for qa, query in zip(questions, queries, strict=True):
            evidence = {position[str(e)] for e in qa["evidence"] if str(e) in position}
            rankings = recipe_rankings(texts, vectors, qa["question"], query, fts, bm25)
            for recipe, ranked in rankings.items():
                value = len(evidence & set(ranked[:K])) / len(evidence)
                for bucket in ("all", group, category_name(qa["category"])):
                    sums[recipe][bucket].append(value)
        fts.close()
    return {
        recipe: {b: {"recall@10": round(float(np.mean(v)), 4), "n": len(v)} for b, v in buckets.items()}
        for recipe, buckets in sums.items()
    }


def _memdesk(samples: list[dict], embedder, tuned_on: Sequence[str], user_name: str) -> dict:
    report = evaluate_samples(samples, embedder, ks=(K,), tuned_on=tuple(tuned_on), user_name=user_name)
    return {bucket: {"recall@10": row[f"recall@{K}"], "n": row["n"]} for bucket, row in report["fused"].items()}


def evaluate(name: str, samples: list[dict], embedder, tuned_on: Sequence[str], user_name: str = "") -> dict:
    result = _score(samples, embedder, tuned_on)
    result["memdesk"] = _memdesk(samples, embedder, tuned_on, user_name)
    best_peer = max(RECIPES, key=lambda r: result[r]["all"]["recall@10"])
    result["memdesk_minus_best_peer"] = round(
        result["memdesk"]["all"]["recall@10"] - result[best_peer]["all"]["recall@10"], 4
    )
    result["best_peer_recipe"] = best_peer
    return {name: result}


def run(locomo: Path | None, beam_chats: Sequence[Path], cache: Path | None, embedder=None) -> dict:
    if embedder is None:
        from memdesk.app.services import default_embedder

        embedder = default_embedder()
    embedder = CachingEmbedder(embedder, cache)
    out: dict = {"k": K, "recipes": list(RECIPES) + ["memdesk"]}
    if locomo is not None:
        samples = json.loads(Path(locomo).read_text(encoding="utf-8"))
        out.update(evaluate("locomo", samples, embedder, TUNING_CONVERSATIONS))
    if beam_chats:
        samples = beam.load_chats(list(beam_chats))
        out.update(evaluate("beam", samples, embedder, beam.DEVELOPMENT, beam.USER))
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return out


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--locomo", type=Path, help="LoCoMo's JSON (locomo_dev.json)")
    parser.add_argument("--beam", type=Path, nargs="*", default=[], help="BEAM chat folders (chats/100K/N)")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdesk-bench-vectors", help="vector cache"
    )
    args = parser.parse_args()
    if args.locomo is None and not args.beam:
        parser.error("give --locomo and/or --beam")
    result = run(args.locomo, args.beam, args.cache)
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
