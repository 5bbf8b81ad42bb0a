"""The real embedder with its vectors kept on disk, for benchmarks that embed the same chats again.

    python -m bench.embedding_cache --locomo locomo_dev.json --beam .bench/beam/1 ... --cache .bench/vectors

Embedding the twenty BEAM chats and LoCoMo's five conversations with all-MiniLM-L6-v2 takes an
hour or more on the shared 2-core machine; the ranker's training data (bench.ranker_data) and its
evaluation embed the same texts each time. ``CachedEmbedder`` answers from the cache and embeds
only what it has not seen (the vectors are the embedder's own: a cached vector is the one it gave).
The cache is a folder of ``.npz`` files, one per batch written, keyed by the SHA-1 of each text.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.common import bench_parser
from bench.report import emit


def _key(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8")).digest()


class CachedEmbedder:
    """An ``Embedder`` that reads vectors from ``folder`` and embeds (and writes) only new texts."""

    def __init__(self, inner, folder: Path) -> None:
        self._inner = inner
        self._folder = Path(folder)
        self._folder.mkdir(parents=True, exist_ok=True)
        self._known: dict[bytes, np.ndarray] = {}
        self._lock = threading.Lock()
        self.embedded = 0  # texts the inner embedder was asked for
        for file in sorted(self._folder.glob("*.npz")):
            with np.load(file) as data:
                for key, vector in zip(data["keys"], data["vectors"], strict=True):
                    self._known[bytes(key)] = vector

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def max_tokens(self) -> int:
        return self._inner.max_tokens

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [_key(t) for t in texts]
        with self._lock:
            missing = list(dict.fromkeys(k for k in keys if k not in self._known))
        if missing:
            wanted = {k: t for k, t in zip(keys, texts, strict=True) if k in set(missing)}
            new = self._inner.embed([wanted[k] for k in missing])
            self.embedded += len(missing)
            with self._lock:
                self._known.update(zip(missing, new, strict=True))
            if len(missing) > 1:  # single queries are kept by the next batch's file or not at all
                self._write(missing, new)
        with self._lock:
            return np.stack([self._known[k] for k in keys]) if keys else np.zeros((0, self.dimension), np.float32)

    def _write(self, keys: list[bytes], vectors: np.ndarray) -> None:
        name = self._folder / f"{time.time_ns()}.npz"
        np.savez(name, keys=np.array(keys, dtype="S20"), vectors=vectors.astype(np.float32))

    def save_queries(self, texts: Sequence[str]) -> None:
        """Keep these (single, already embedded) texts' vectors too."""
        keys = [_key(t) for t in texts]
        with self._lock:
            known = [(k, self._known[k]) for k in dict.fromkeys(keys) if k in self._known]
        if known:
            self._write([k for k, _ in known], np.stack([v for _, v in known]))


def chat_texts(samples: list[dict]) -> list[str]:
    """What recall memory embeds for each turn of these LoCoMo-shaped samples (speaker and text)."""
    from memdesk.core.evaluation.locomo import turn_text
    from memdesk.core.memory.recall import embedding_text

    texts = []
    for sample in samples:
        conversation = sample["conversation"]
        number = 1
        while f"session_{number}" in conversation:
            texts += [embedding_text(turn_text(t), t["speaker"]) for t in conversation[f"session_{number}"]]
            number += 1
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--locomo", type=Path)
    parser.add_argument("--beam", type=Path, nargs="*", default=[])
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args(argv)
    import json

    from memdesk.app.services import default_embedder
    from memdesk.core.evaluation.beam import load_chats

    samples = []
    if args.locomo:
        samples += json.loads(args.locomo.read_text(encoding="utf-8"))
    if args.beam:
        samples += load_chats(args.beam)
    embedder = CachedEmbedder(default_embedder(), args.cache)
    texts = list(dict.fromkeys(chat_texts(samples)))
    started = time.perf_counter()
    for start in range(0, len(texts), args.batch):
        embedder.embed(texts[start : start + args.batch])
        print(f"  {min(start + args.batch, len(texts))}/{len(texts)}", file=sys.stderr, flush=True)
    emit(
        {"texts": len(texts), "embedded": embedder.embedded, "seconds": round(time.perf_counter() - started, 1)},
        args.json,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
