"""The app's embedder (all-MiniLM-L6-v2 in NumPy) against sentence-transformers on torch, in one run.

    python -m bench.embedder --json
    python -m bench.embedder --rounds 2 --scale 0.2 --json      # a quick look

Both on one thread (the app leaves the other cores to the model's process), in one process,
alternating who goes first each round, on texts of the lengths MemDesk embeds: imported or chat
messages (bench.history's synthetic export), document chunks of ten sentences and of the whole
256-token window (what ingestion cuts), and single queries one at a time (automatic recall). Each
figure is the best round of each; ``*_over_torch`` above 1 means the app's embedder is faster,
by wall clock and by CPU time (the CPU-time ratio moves less with the machine's load).
Start-up and memory are measured apart, each embedder in a fresh process: seconds from the first
import to the first vector, and the process's peak resident memory then and after a batch of 256
window-sized chunks. ``min_cosine`` is the lowest agreement between the two on every text.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import bench_parser, sentence
from bench.report import emit


def corpora(scale: float) -> dict[str, tuple[list[str], int]]:
    """Name -> (texts, texts per call)."""
    from bench.history import synthetic_export
    from memdesk.core.transfer.history.reading import Export

    rng = random.Random(4)
    with tempfile.TemporaryDirectory(prefix="memdesk-bench-embedder-") as folder:
        export = Path(folder) / "export.zip"
        synthetic_export(export, 0.25 * scale)
        messages = [m.text for e in Export(export).entries() if e.conversation for m in e.conversation.messages]
    count = max(4, int(200 * scale))
    return {
        "messages": (messages, 256),
        "chunks_10_sentences": ([" ".join(sentence(rng) for _ in range(10)) for _ in range(count)], 256),
        "chunks_window_sized": ([" ".join(sentence(rng) for _ in range(20)) for _ in range(count // 2)], 256),
        "queries_one_at_a_time": ([sentence(rng) for _ in range(count // 2)], 1),
    }


def speed(rounds: int, scale: float) -> tuple[dict, float]:
    import torch
    from sentence_transformers import SentenceTransformer

    from memdesk.app.services import default_embedder
    from memdesk.core.embedding.minilm import bundled_model_path

    torch.set_num_threads(1)
    reference = SentenceTransformer(str(bundled_model_path()), device="cpu")
    ours = default_embedder()

    def embed(who: str, texts: list[str], per_call: int) -> np.ndarray:
        out = []
        for start in range(0, len(texts), per_call):
            part = texts[start : start + per_call]
            if who == "torch":
                out.append(reference.encode(part, batch_size=64, normalize_embeddings=True, show_progress_bar=False))
            else:
                out.append(ours.embed(part))
        return np.vstack(out)

    figures: dict = {}
    lowest = 1.0
    for name, (texts, per_call) in corpora(scale).items():
        wall: dict[str, list[float]] = {"torch": [], "numpy": []}
        cpu: dict[str, list[float]] = {"torch": [], "numpy": []}
        for turn in range(rounds):
            for who in ("torch", "numpy") if turn % 2 == 0 else ("numpy", "torch"):
                if who == "numpy":  # the last round's queries out of the recent-queries cache
                    for i in range(16):
                        ours.embed([f"filler {turn} {i}"])
                started, started_cpu = time.perf_counter(), time.process_time()
                vectors = embed(who, texts, per_call)
                wall[who].append(time.perf_counter() - started)
                cpu[who].append(time.process_time() - started_cpu)
                if turn == 0:
                    figures.setdefault("_vectors", {})[who] = vectors
        pair = figures.pop("_vectors")
        lowest = min(lowest, float(np.min(np.sum(pair["torch"] * pair["numpy"], axis=1))))
        tokens = sum(min(ours.count_tokens(t), ours.max_tokens) + 2 for t in texts)
        figures[name] = {
            "texts": len(texts),
            "mean_tokens": round(tokens / len(texts), 1),
            "torch_per_s": round(len(texts) / min(wall["torch"]), 1),
            "numpy_per_s": round(len(texts) / min(wall["numpy"]), 1),
            "numpy_over_torch": round(min(wall["torch"]) / min(wall["numpy"]), 3),
            "cpu_numpy_over_torch": round(min(cpu["torch"]) / min(cpu["numpy"]), 3),
        }
    return figures, lowest


def child(who: str, chunks: int) -> dict:
    """In a fresh process: seconds to the first vector, and peak memory then and after a batch of
    ``chunks`` window-sized chunks."""
    started = time.perf_counter()
    if who == "torch":
        import torch
        from sentence_transformers import SentenceTransformer

        from memdesk.core.embedding.minilm import bundled_model_path

        torch.set_num_threads(1)
        model = SentenceTransformer(str(bundled_model_path()), device="cpu")
        embed = lambda texts: model.encode(texts, batch_size=64, normalize_embeddings=True)  # noqa: E731
    else:
        from memdesk.app.services import default_embedder

        embed = default_embedder().embed
    embed(["the first search"])
    first = time.perf_counter() - started
    at_first = _peak_mb()
    rng = random.Random(5)
    embed([" ".join(sentence(rng) for _ in range(20)) for _ in range(chunks)])
    return {"first_vector_s": round(first, 2), "peak_rss_mb_loaded": at_first, "peak_rss_mb_after_batch": _peak_mb()}


def _peak_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def start_up(who: str, chunks: int) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "bench.embedder", "--child", who, "--chunks", str(chunks)],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(rounds: int = 4, scale: float = 1.0) -> dict:
    load_before = os.getloadavg()
    figures, lowest = speed(rounds, scale)
    memory = {who: start_up(who, max(4, int(256 * scale))) for who in ("torch", "numpy")}
    return {
        **figures,
        "start_and_memory": memory,
        "first_vector_torch_over_numpy": round(
            memory["torch"]["first_vector_s"] / memory["numpy"]["first_vector_s"], 2
        ),
        "min_cosine": round(lowest, 6),
        "load": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds; the best of each is kept")
    parser.add_argument("--scale", type=float, default=1.0, help="the corpora's size (1: about 650 texts)")
    parser.add_argument("--child", choices=("torch", "numpy"), help="(internal) measure one embedder's start")
    parser.add_argument("--chunks", type=int, default=256, help="(internal) the child's batch")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.chunks)))
        return
    emit(run(args.rounds, args.scale), args.json)


if __name__ == "__main__":
    main()
