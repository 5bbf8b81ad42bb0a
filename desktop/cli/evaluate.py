"""`memdesk eval locomo PATH [--k 10] [--json]`: recall@k of conversation search on LoCoMo."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_eval_command(subparsers: "argparse._SubParsersAction") -> argparse.ArgumentParser:
    parser = subparsers.add_parser("eval", help="measure memory search quality on an evaluation set")
    kinds = parser.add_subparsers(dest="eval_kind", required=True)
    locomo = kinds.add_parser("locomo", help="conversation search recall on a LoCoMo JSON file")
    locomo.add_argument("path", type=Path, help="a LoCoMo file such as locomo_dev.json")
    locomo.add_argument("--k", type=int, default=10, help="the largest cut-off reported (recall@5 is always reported)")
    locomo.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    locomo.add_argument("--no-graph", action="store_true", help="skip the knowledge graph (its extraction takes a minute or two)")
    locomo.set_defaults(handler=run_eval)
    return parser


def run_eval(args: argparse.Namespace) -> int:
    from desktop.core.embedding.sentence_transformer import SentenceTransformerEmbedder
    from desktop.core.evaluation.locomo import evaluate
    from desktop.errors import MemDeskError

    if not args.path.is_file():
        print(f"error: {args.path} does not exist", file=sys.stderr)
        return 2
    ks = tuple(sorted({5, max(1, args.k)}))
    try:
        analyser = None
        if not args.no_graph:
            from desktop.core.graph.nlp import SpacyAnalyser

            analyser = SpacyAnalyser()
        report = evaluate(
            args.path, SentenceTransformerEmbedder(), ks=ks, analyser=analyser,
            progress=None if args.json else (lambda sample: print(f"  evaluated {sample}", file=sys.stderr)),
        )
    except (MemDeskError, ValueError, KeyError) as error:
        print(f"error: {getattr(error, 'user_message', error)}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"LoCoMo conversation search: {report['questions']} questions ({report['skipped']} skipped: evidence not found)")
    print(f"weights tuned on {', '.join(report['tuned_on'])}; the other conversations are held out")
    header = "".join(f"{'recall@' + str(k):>11}" for k in ks)
    titles = {"fused": "MemDesk search (fused)", "bm25": "BM25 only", "fused+graph": "MemDesk search with knowledge-graph expansion"}
    for mode in [m for m in titles if m in report]:
        print(f"\n{titles[mode]}")
        print(f"  {'':14}{header}{'n':>7}")
        rows = report[mode]
        order = ["all", *[c for c in ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial") if c in rows], "tuned", "held_out"]
        order += sorted(n for n in rows if n not in order)
        for name in order:
            row = rows[name]
            print(f"  {name:14}" + "".join(f"{row[f'recall@{k}']:>11.3f}" for k in ks) + f"{row['n']:>7}")
    if "search_ms" in report:
        print("\nmedian search time (ms): " + ", ".join(f"{mode} {ms}" for mode, ms in report["search_ms"].items()))
    return 0
