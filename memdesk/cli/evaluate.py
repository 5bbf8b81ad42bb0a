"""`memdesk eval locomo PATH [--mode retrieval|context|answer] [--json]`, and
`memdesk eval beam DIR... [--mode search|context] [--json]` (BEAM's chats in LoCoMo's shape,
memdesk.core.evaluation.beam: the same measures, per BEAM question kind).

* ``retrieval`` (the default): recall@k of conversation search (memdesk.core.evaluation.locomo).
* ``context --window N``: replay each conversation into a fresh agent and report the share of
  questions whose evidence turns are in the prompt the model receives
  (memdesk.core.evaluation.locomo_replay).
* ``answer --window N --limit K``: ask the real agent K questions and score its replies with
  LoCoMo's token F1.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from memdesk.core.evaluation.beam import KINDS as BEAM_KINDS

MODES = ("retrieval", "context", "answer")
CATEGORY_ORDER = ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial", *BEAM_KINDS)


def add_eval_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("eval", help="measure memory search quality on an evaluation set")
    kinds = parser.add_subparsers(dest="eval_kind", required=True)
    locomo = kinds.add_parser("locomo", help="conversation memory on a LoCoMo JSON file")
    locomo.add_argument("path", type=Path, help="a LoCoMo file such as locomo_dev.json")
    locomo.add_argument(
        "--mode",
        choices=MODES,
        default="retrieval",
        help="retrieval: recall@k of conversation search; context: is the evidence in the model's prompt; "
        "answer: token F1 of the real agent's replies",
    )
    locomo.add_argument(
        "--k", type=int, default=10, help="retrieval: the largest cut-off reported (recall@5 is always reported)"
    )
    locomo.add_argument(
        "--window", type=int, help="context/answer: the context window in tokens (default: the context_size setting)"
    )
    locomo.add_argument(
        "--limit", type=int, default=20, help="answer: how many questions in all, spread over the conversations"
    )
    locomo.add_argument(
        "--conversation",
        action="append",
        dest="conversations",
        metavar="ID",
        help="only this conversation (repeatable)",
    )
    locomo.add_argument(
        "--variant",
        choices=("fifo", "fifo+recall"),
        action="append",
        dest="variants",
        help=(
            "context/answer: only this variant (repeatable; default: both,"
            " FIFO window only and FIFO + automatic recall)"
        ),
    )
    locomo.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    locomo.add_argument(
        "--through-import",
        action="store_true",
        help="retrieval: also write each conversation out as a ChatGPT export, import it with `memdesk import`'s"
        " code, and compare its recall with the conversation stored directly",
    )
    locomo.add_argument(
        "--no-graph", action="store_true", help="skip the knowledge graph (its extraction takes a minute or two)"
    )
    locomo.set_defaults(handler=run_eval)
    beam = kinds.add_parser("beam", help="conversation memory on BEAM chat folders (long technical messages)")
    beam.add_argument(
        "paths", type=Path, nargs="+", metavar="DIR", help="BEAM chat folders (chats/100K/N) or a folder of them"
    )
    beam.add_argument(
        "--mode",
        choices=("search", "context", "versions"),
        default="search",
        help="search: share of evidence messages conversation search ranks in the top k; "
        "context: share of evidence messages wholly or partly in the model's prompt after a replay; "
        "versions: share of knowledge-update and contradiction questions whose newer statement automatic recall shows"
        " first, marked",
    )
    beam.add_argument(
        "--k", type=int, default=10, help="search: the largest cut-off reported (recall@5 is always reported)"
    )
    beam.add_argument(
        "--window", type=int, help="context: the context window in tokens (default: the context_size setting)"
    )
    beam.add_argument(
        "--variant",
        choices=("fifo", "fifo+recall"),
        action="append",
        dest="variants",
        help="context: only this variant (repeatable; default: both)",
    )
    beam.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    beam.add_argument(
        "--no-graph",
        action="store_true",
        help="search: skip the knowledge graph (its extraction takes about a minute per chat)",
    )
    beam.set_defaults(handler=run_beam)
    return parser


def run_beam(args: argparse.Namespace) -> int:
    from memdesk.core.base.errors import MemDeskError
    from memdesk.core.evaluation.beam import load_chats

    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        print(f"error: {', '.join(missing)} does not exist", file=sys.stderr)
        return 2
    progress = lambda text: print(f"  {text}", file=sys.stderr, flush=True)  # noqa: E731 (stdout stays one JSON object)
    try:
        samples = load_chats(args.paths)
        if args.mode == "versions":
            report = _beam_versions(samples, progress)
        else:
            report = (
                _beam_search(args, samples, progress)
                if args.mode == "search"
                else _replay(args, progress, samples=samples)
            )
    except (MemDeskError, ValueError, KeyError, OSError) as error:
        print(f"error: {getattr(error, 'user_message', error)}", file=sys.stderr)
        return 1
    report = {"data_set": "BEAM", "chats": [s["sample_id"] for s in samples], **report}
    if args.json:
        print(json.dumps(report))
    elif args.mode == "versions":
        _print_versions(report)
    elif args.mode == "search":
        _print_retrieval(
            report,
            tuple(sorted({5, max(1, args.k)})),
            title="BEAM conversation search",
            extra=("tuned", "held_out", *_groups()),
        )
    else:
        _print_replay(report, title="BEAM")
    return 0


def _beam_versions(samples: list[dict], progress) -> dict:
    from memdesk.app.services import default_embedder
    from memdesk.core.evaluation.beam_versions import evaluate_versions

    return evaluate_versions(samples, default_embedder(), progress=lambda s: progress(f"evaluated chat {s}"))


def _print_versions(report: dict) -> None:
    from memdesk.core.evaluation.beam_versions import KINDS, MEASURES

    print(f"BEAM newest version first (automatic recall, {report['budget_tokens']}-token section)")
    print(f"{'':30}{'variant':>8}{'n':>5}" + "".join(f"{m:>21}" for m in MEASURES))
    for bucket in ("all", *KINDS):
        for variant in ("before", "after"):
            row = report[variant].get(bucket)
            if row:
                print(f"{bucket:30}{variant:>8}{row['questions']:>5}" + "".join(f"{row[m]:>21}" for m in MEASURES))
    print(f"sections of other questions with a marked pair: {report['after']['marked_elsewhere']}")


def _beam_search(args: argparse.Namespace, samples: list[dict], progress) -> dict:
    from memdesk.app.services import default_embedder
    from memdesk.core.evaluation.beam import DEVELOPMENT, USER
    from memdesk.core.evaluation.locomo import evaluate_samples

    analyser = None
    if not args.no_graph:
        from memdesk.core.graph.nlp import SpacyAnalyser

        analyser = SpacyAnalyser()
    return evaluate_samples(
        samples,
        default_embedder(),
        ks=tuple(sorted({5, max(1, args.k)})),
        analyser=analyser,
        tuned_on=DEVELOPMENT,
        progress=lambda s: progress(f"evaluated chat {s}"),
        user_name=USER,
    )


def run_eval(args: argparse.Namespace) -> int:
    from memdesk.core.base.errors import MemDeskError

    if not args.path.is_file():
        print(f"error: {args.path} does not exist", file=sys.stderr)
        return 2
    # Replays take minutes: their progress goes to stderr even with --json (stdout stays one object).
    quiet = args.json and args.mode == "retrieval"
    progress = None if quiet else (lambda text: print(f"  {text}", file=sys.stderr, flush=True))
    try:
        if args.mode == "retrieval" and args.through_import:
            report = _through_import(args)
        elif args.mode == "retrieval":
            report = _retrieval(args, progress)
        else:
            report = _replay(args, progress)
    except (MemDeskError, ValueError, KeyError) as error:
        print(f"error: {getattr(error, 'user_message', error)}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report))
    elif args.mode == "retrieval" and args.through_import:
        for side in ("direct", "imported"):
            row = report[side]
            cuts = "  ".join(f"{k} {v}" for k, v in row.items() if k.startswith("recall@"))
            label = "stored directly" if side == "direct" else "imported from a ChatGPT export"
            print(f"{label:32} {cuts}  ({row['questions']} questions)")
    elif args.mode == "retrieval":
        _print_retrieval(report, tuple(sorted({5, max(1, args.k)})))
    else:
        _print_replay(report)
    return 0


# --- retrieval ------------------------------------------------------------------------------
def _retrieval(args: argparse.Namespace, progress) -> dict:
    from memdesk.app.services import default_embedder
    from memdesk.core.evaluation.locomo import evaluate

    ks = tuple(sorted({5, max(1, args.k)}))
    analyser = None
    if not args.no_graph:  # graph expansion is measured beside plain search, in the same run
        from memdesk.core.graph.nlp import SpacyAnalyser

        analyser = SpacyAnalyser()
    return evaluate(
        args.path,
        default_embedder(),
        ks=ks,
        analyser=analyser,
        progress=progress and (lambda s: progress(f"evaluated {s}")),
    )


def _through_import(args: argparse.Namespace) -> dict:
    from memdesk.app.services import default_embedder
    from memdesk.core.evaluation.locomo_import import evaluate_through_import
    from memdesk.core.transfer.history.importer import HistoryImport

    samples = json.loads(args.path.read_text(encoding="utf-8"))
    if args.conversations:
        samples = [s for s in samples if s["sample_id"] in args.conversations]
    return evaluate_through_import(
        samples,
        default_embedder(),
        lambda memory, agent_id, path: HistoryImport.start(memory, agent_id, path).run(),
        ks=tuple(sorted({5, max(1, args.k)})),
    )


def _groups() -> tuple[str, ...]:
    return tuple(f"{g}{c}" for g in ("tuned", "held_out") for c in ("", *(f"/{n}" for n in CATEGORY_ORDER)))


def _print_retrieval(
    report: dict,
    ks: tuple[int, ...],
    title: str = "LoCoMo conversation search",
    extra: tuple[str, ...] = ("tuned", "held_out"),
) -> None:
    print(f"{title}: {report['questions']} questions ({report['skipped']} skipped: evidence not found)")
    print(f"weights tuned on {', '.join(report['tuned_on'])}; the other conversations are held out")
    header = "".join(f"{'recall@' + str(k):>11}" for k in ks)
    titles = {
        "fused": "MemDesk search (fused; long messages by their best part)",
        "fused/whole": "MemDesk search, long messages scored whole",
        "bm25": "BM25 only",
        "fused+graph": "MemDesk search with knowledge-graph expansion",
        "learned": "MemDesk search, the learned ranking (the app's: memdesk/resources/ranker.json)",
    }
    for mode in [m for m in titles if m in report]:
        print(f"\n{titles[mode]}")
        rows = report[mode]
        width = max(14, *(len(n) + 1 for n in rows))
        print(f"  {'':{width}}{header}{'n':>7}")
        for name in _row_order(rows, extra=extra):
            row = rows[name]
            print(f"  {name:{width}}" + "".join(f"{row[f'recall@{k}']:>11.3f}" for k in ks) + f"{row['n']:>7}")
    for mode, found in report.get("newer_above_older", {}).items():
        print(
            f"knowledge updates, the newer statement above the older ({mode}):"
            f" {found['share']:.3f} of {found['pairs']} pairs"
        )
    if "search_ms" in report:
        print("\nmedian search time (ms): " + ", ".join(f"{mode} {ms}" for mode, ms in report["search_ms"].items()))
    judges = [("", report.get("nothing_detector", {}))]
    if report.get("model", {}).get("judge"):
        judges.append((", support score alone", report.get("nothing_detector_by_support", {})))
    for label, buckets in judges:
        for bucket, found in buckets.items():
            if found["auroc"] is None:
                continue
            print(
                f'"nothing on that" ({bucket}{label}): AUROC {found["auroc"]:.3f} over {found["answerable"]} answerable'
                f" and {found['unanswerable']} unanswerable questions;"
                f" said for {found['nothing_for_answerable']:.1%} of answerable,"
                f" {found['nothing_for_unanswerable']:.1%} of unanswerable"
            )


def _row_order(rows: dict, extra: tuple[str, ...] = ()) -> list[str]:
    order = ["all", *[c for c in CATEGORY_ORDER if c in rows], *[e for e in extra if e in rows]]
    return order + sorted(n for n in rows if n not in order)


# --- replay (context and answer) --------------------------------------------------------------
class _AppStore:
    """A throw-away store under ``folder`` with one agent built by the app's composition root."""

    def __init__(self, folder: Path, runtime, clock, settings, embedder, speakers: tuple[str, str]) -> None:
        from memdesk.app.services import open_services
        from memdesk.core.base.paths import Paths

        self._services = open_services(Paths(folder), embedder=embedder, clock=clock)
        self.db = self._services.db
        self._runtime = runtime
        self._settings = settings
        user, agent = speakers
        self._services.settings_store.set("user_name", user)  # memory search reads it from the store
        self._record = self._services.create_agent(agent)

    def open_agent(self):
        from memdesk.app.agents import open_agent

        return open_agent(self._services, self._record, self._runtime, settings=self._settings)

    def close(self) -> None:
        self._services.close()


def _replay(args: argparse.Namespace, progress, samples: list[dict] | None = None) -> dict:
    """A LoCoMo file's replay (``args.path``), or, given ``samples``, BEAM chats in LoCoMo's shape."""
    from memdesk.app.runtimes import make_runtime
    from memdesk.app.services import default_embedder
    from memdesk.cli.passphrase import open_store_services
    from memdesk.core.evaluation.beam import DEVELOPMENT
    from memdesk.core.evaluation.locomo_replay import FIFO, FIFO_RECALL, evaluate, evaluate_samples

    embedder = default_embedder()
    user = open_store_services(embedder=embedder)  # the active model and settings
    try:
        settings = user.settings
    finally:
        user.close()
    if args.window:
        settings = replace(settings, context_size=args.window)
    variants = tuple(v for v in (FIFO, FIFO_RECALL) if not args.variants or v in args.variants)

    def factory(folder: Path, runtime, clock, automatic_recall: bool, speakers: tuple[str, str]) -> _AppStore:
        # The eval measures what reaches the prompt, not this machine's speed: automatic recall
        # gets all the time it needs (the app's deadline only drops it when the machine is slow).
        chosen = replace(settings, auto_recall=automatic_recall, auto_recall_timeout_ms=60_000)
        return _AppStore(folder, runtime, clock, chosen, embedder, speakers)

    if progress:
        progress(f"loading the model with a {settings.context_size}-token window")
    runtime = make_runtime(settings)
    try:
        if samples is not None:
            report = evaluate_samples(
                samples,
                runtime,
                factory,
                mode="context",
                variants=variants,
                progress=progress,
                tuned_on=DEVELOPMENT,
                partly=True,
            )
        else:
            report = evaluate(
                args.path,
                runtime,
                factory,
                mode=args.mode,
                variants=variants,
                limit=args.limit if args.mode == "answer" else None,
                samples=args.conversations,
                progress=progress,
            )
    finally:
        runtime.close()
    return report


def _print_replay(report: dict, title: str = "LoCoMo") -> None:
    answer = report["mode"] == "answer"
    print(
        f"{title} {report['mode']} evaluation: {report['questions']} questions ({report['skipped']} skipped), "
        f"{report['model']} tokenizer, window {report['window']} tokens, {report['seconds']} s"
    )
    held_out = [c for c in report["conversations"] if c not in report.get("tuned_on", [])]
    print(
        f"automatic recall tuned on {', '.join(report.get('tuned_on', [])) or 'none of these'}; held out:"
        f" {', '.join(held_out) or 'none'}"
    )
    for variant, rows in report["variants"].items():
        label = "FIFO window only (no search call)" if variant == "fifo" else "FIFO window + automatic recall"
        print(f"\n{label}")
        columns = (
            ["evidence_in_context", "evidence_recall"]
            + (["evidence_partly"] if "evidence_partly" in rows.get("all", {}) else [])
            + (["f1"] if answer else [])
        )
        print(f"  {'':22}" + "".join(f"{c:>21}" for c in columns) + f"{'n':>7}")
        for name in _row_order(rows, extra=_groups()):
            row = rows[name]
            print(f"  {name:22}" + "".join(f"{row[c]:>21.3f}" for c in columns) + f"{row['n']:>7}")
    for variant, reason in report.get("unavailable", {}).items():
        print(f"\n{variant}: not measured ({reason})")
