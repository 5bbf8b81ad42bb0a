"""What embedding one search costs automatic recall, per embedder: p50/p95 and their ratio.

    python -m bench.query_embedding --json [--queries 60] [--embedder multilingual-e5-small]

Automatic recall embeds the user's message once per turn, inside its 300 ms deadline; the rest of
the search does not depend on the model. LoCoMo's questions (synthetic ones without the data) are
embedded one at a time, each a new text, the two embedders taking turns question by question so
that the shared machine's load falls on both alike. Both models are loaded and warmed first.
"""

from __future__ import annotations

import statistics
import sys
import time

from bench.common import bench_parser, percentile
from bench.recall import LOCOMO, _corpus
from bench.report import emit
from desktop.core.embedding import query_vector
from desktop.core.embedding.choice import E5_SMALL, MINILM, NAMES, make_embedder


def run(queries: int, candidate: str = E5_SMALL) -> dict[str, object]:
    _, questions = _corpus(LOCOMO, 0)
    questions = list(dict.fromkeys(questions))[: queries + 1]
    embedders = {MINILM: make_embedder(MINILM), candidate: make_embedder(candidate)}
    for embedder in embedders.values():
        query_vector(embedder, questions[-1])  # load and warm
    times: dict[str, list[float]] = {name: [] for name in embedders}
    for question in questions[:-1]:
        for name, embedder in embedders.items():
            started = time.perf_counter()
            query_vector(embedder, question)
            times[name].append((time.perf_counter() - started) * 1000)
    result: dict[str, object] = {"queries": len(times[MINILM]), "candidate": embedders[candidate].model_id}
    for label, name in (("minilm", MINILM), ("candidate", candidate)):
        result[f"{label}_ms_p50"] = round(statistics.median(times[name]), 1)
        result[f"{label}_ms_p95"] = round(percentile(times[name], 0.95), 1)
    result["ratio_p50"] = round(result["candidate_ms_p50"] / result["minilm_ms_p50"], 2)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--embedder", choices=[n for n in NAMES if n != MINILM], default=E5_SMALL, help="the candidate beside MiniLM")
    args = parser.parse_args(argv)
    emit(run(args.queries, args.embedder), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
