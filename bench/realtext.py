"""Real text for the benchmarks: LoCoMo turns and BEAM messages with their questions, embedded once
by MemDesk's own embedder (the bundled all-MiniLM-L6-v2) and kept in a cache, and grown to a
benchmark's size by repeating the vectors with small noise.

Nothing here is downloaded: the data sets are given as paths (``../shared/data/locomo/...``, BEAM
chat folders), and tests pass small files of their own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memdesk.core.evaluation import beam
from memdesk.core.evaluation.locomo import turn_text

#: The noise added to a repeated vector, as a share of its length (a unit vector plus Gaussian noise
#: of this norm, renormalised): a copy keeps a cosine of about 0.95 with its original, so the copies
#: of one text are neighbours of each other without being ties.
COPY_NOISE = 0.3
#: Texts embedded between two saves of the cache.
SAVE_EVERY = 1024


@dataclass
class Corpus:
    """Documents (one per turn or message, with the id the questions' evidence uses) and questions."""

    texts: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)  # "sample/dia_id"
    questions: list[str] = field(default_factory=list)
    evidence: list[set[str]] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # the question's data set and sample


def _samples_texts(samples: list[dict], corpus: Corpus, source: str) -> None:
    for sample in samples:
        conversation = sample["conversation"]
        sample_id = str(sample["sample_id"])
        for key, turns in conversation.items():
            if not key.startswith("session_") or not isinstance(turns, list):
                continue
            for turn in turns:
                corpus.texts.append(turn_text(turn))
                corpus.ids.append(f"{sample_id}/{turn['dia_id']}")
        for qa in sample.get("qa", []):
            evidence = {f"{sample_id}/{e}" for e in qa.get("evidence", [])}
            corpus.questions.append(qa["question"])
            corpus.evidence.append(evidence)
            corpus.kinds.append(str(qa.get("category")))
            corpus.sources.append(f"{source}:{sample_id}")


def load(locomo: Path | None = None, beam_chats: Sequence[Path] = ()) -> Corpus:
    """LoCoMo's file (every conversation in it) and BEAM chat folders, as one corpus."""
    corpus = Corpus()
    if locomo is not None:
        _samples_texts(json.loads(Path(locomo).read_text(encoding="utf-8")), corpus, "locomo")
    if beam_chats:
        _samples_texts(beam.load_chats(list(beam_chats)), corpus, "beam")
    return corpus


def embed_cached(texts: Sequence[str], cache: Path | None, embedder=None) -> np.ndarray:
    """Unit vectors of ``texts`` by MemDesk's embedder (the bundled MiniLM unless one is given),
    each text embedded once across runs: vectors are kept in ``cache`` (a folder) by the text's hash
    and the model's id."""
    if embedder is None:
        from memdesk.app.services import default_embedder

        embedder = default_embedder()
    model = embedder.model_id
    keys = [hashlib.sha256(f"{model}\0{t}".encode()).hexdigest()[:32] for t in texts]
    known: dict[str, np.ndarray] = {}
    store = None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        store = cache / f"vectors-{hashlib.sha256(model.encode()).hexdigest()[:12]}.npz"
        if store.exists():
            with np.load(store) as saved:
                known = dict(zip(saved["keys"].tolist(), saved["vectors"], strict=True))
    todo = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in known}.items())
    for start in range(0, len(todo), SAVE_EVERY):  # saved as it goes: an interrupted run keeps its work
        part = todo[start : start + SAVE_EVERY]
        vectors = np.asarray(embedder.embed([t for _, t in part]), dtype=np.float32)
        known.update(zip([k for k, _ in part], vectors, strict=True))
        if store is not None:
            names = sorted(known)
            np.savez(store, keys=np.asarray(names), vectors=np.stack([known[k] for k in names]))
    return np.stack([known[k] for k in keys]).astype(np.float32) if keys else np.zeros((0, embedder.dimension))


def grow(vectors: np.ndarray, n: int, seed: int = 7, noise: float = COPY_NOISE) -> np.ndarray:
    """``n`` unit vectors: the given ones first, then copies of them in turn, each with Gaussian
    noise of norm about ``noise``, renormalised (float32)."""
    rng = np.random.default_rng(seed)
    base = np.asarray(vectors, dtype=np.float32)
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    out[: min(n, len(base))] = base[:n]
    scale = noise / np.sqrt(base.shape[1])
    for start in range(len(base), n, len(base)):
        m = min(len(base), n - start)
        block = base[:m] + rng.standard_normal((m, base.shape[1])).astype(np.float32) * scale
        out[start : start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out
