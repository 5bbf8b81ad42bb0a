"""`memdesk eval locomo|beam --mode search --no-graph --json`, with the embedder's vectors kept on disk.

    python -m bench.eval_cached --beam .bench/beam/11 ... .bench/beam/20 --vectors .bench/vectors --json
    python -m bench.eval_cached --locomo locomo_dev.json --vectors .bench/vectors --json

The same measure as the command (memdesk.core.evaluation.locomo.evaluate_samples: recall@k per
kind for the hand fusion and the shipped learned ranking, knowledge updates' newer-above-older
share, both "nothing on that" judgements), on vectors bench.embedding_cache made with the same
all-MiniLM-L6-v2: embedding BEAM's twenty chats again takes an hour on the shared machine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench.common import bench_parser
from bench.embedding_cache import CachedEmbedder
from bench.report import emit


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--locomo", type=Path)
    group.add_argument("--beam", type=Path, nargs="+")
    parser.add_argument("--vectors", type=Path, required=True, help="bench.embedding_cache's folder")
    args = parser.parse_args(argv)
    from memdesk.app.services import default_embedder
    from memdesk.core.evaluation.beam import DEVELOPMENT, USER, load_chats
    from memdesk.core.evaluation.locomo import evaluate_samples

    embedder = CachedEmbedder(default_embedder(), args.vectors)
    if args.beam:
        samples = load_chats(args.beam)
        report = evaluate_samples(samples, embedder, tuned_on=DEVELOPMENT, user_name=USER)
        report = {"data_set": "BEAM", "chats": [s["sample_id"] for s in samples], **report}
    else:
        samples = json.loads(args.locomo.read_text(encoding="utf-8"))
        report = evaluate_samples(samples, embedder)
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
