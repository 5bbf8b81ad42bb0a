"""The fault campaign: kill, fuzz and audit MemDesk, and check that nothing committed is lost.

    python -m bench.faults --json [--trials N]

One JSON object; exit 1 when any target is missed. Targets (issue 12):
- agent_kill: kill -9 of the agent's process at random points of a real step (scripted runtime),
  100 trials: 0 lost committed messages, PRAGMA integrity_check ok, the next start resumes.
- sent_line_kill (issue 18): a line typed at the terminal prompt while background work runs
  (the login turn, a timed heartbeat, a consolidation pass, knowledge-graph extraction; each holds
  the model or the analyser for 3 s that nothing cuts short), the process killed -9 at a random
  moment 0-10 s after the prompt returned it, 100 trials: 0 sent lines lost, none saved twice.
- sent_line_kill_window: the same in the real window (offscreen), a message typed and sent while
  the login turn or a timed heartbeat holds the model, 100 trials: 0 lost, none saved twice.
- ingest_kill: kill -9 during ingestion of a 200-file folder, 50 trials: the next run resumes,
  ends with the chunk count of an uninterrupted run and no duplicate passages.
- fuzz: 10,000 malformed function calls (random text, wrong JSON, wrong types, huge strings,
  unknown functions, NUL bytes) through the agent, raw text as with the grammar off: 0 crashes,
  each answered as a failed call.
- model_kill: the model child killed while idle and while generating, 20 each: the next message
  works (real llama.cpp with the bundled model).
- sockets: a default run of the CLI and of the window (offscreen) opens 0 network sockets.

``--only NAME`` (repeatable) runs some campaigns alone at full scale, for a shared machine;
``--trials N`` scales every campaign down (N agent kills and N sent-line kills of each front end, N/2 ingestion
trials, 100*N fuzzed calls, N/5 model kills of each kind) for a quick run; the defaults are the
issue's counts. One module per campaign beside this one (``bench/faults/<campaign>.py``).
"""

from __future__ import annotations

import json
import math
import random
import time

from bench.common import bench_parser
from bench.faults import agent_kill, fuzz, ingest_kill, model_kill, sent_line_kill, sockets
from bench.faults.support import progress

CAMPAIGNS = ["agent_kill", "sent_line_kill", "sent_line_kill_window", "ingest_kill", "fuzz", "model_kill", "sockets"]


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument(
        "--trials",
        type=int,
        default=100,
        help="agent kills; the other campaigns scale with it (default: the issue's counts)",
    )
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=CAMPAIGNS,
        help="leave a campaign out (reported as skipped, and the run cannot pass)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        choices=CAMPAIGNS,
        help="run only these campaigns, at full scale (the run passes when they do; 'complete' says false)",
    )
    args = parser.parse_args(argv)
    n = max(1, args.trials)
    # Each campaign draws from its own generator, so a campaign run alone (--only) sees the same
    # trials as in a whole run.
    rng = {name: random.Random(f"{args.seed}-{name}") for name in CAMPAIGNS}
    campaigns = {
        "agent_kill": lambda: agent_kill.run(n, rng["agent_kill"]),
        "sent_line_kill": lambda: sent_line_kill.run(n, rng["sent_line_kill"]),
        "sent_line_kill_window": lambda: sent_line_kill.run(n, rng["sent_line_kill_window"], window=True),
        "ingest_kill": lambda: ingest_kill.run(max(1, math.ceil(n / 2)), rng["ingest_kill"]),
        "fuzz": lambda: fuzz.run(100 * n, rng["fuzz"]),
        "model_kill": lambda: model_kill.run(max(1, math.ceil(n / 5)), rng["model_kill"]),
        "sockets": sockets.run,
    }
    if args.only:
        campaigns = {name: run for name, run in campaigns.items() if name in args.only}
    report: dict = {"trials": n, "seed": args.seed, "complete": not args.only and not args.skip}
    for name, run in campaigns.items():
        if name in args.skip:
            report[name] = {"skipped": True, "ok": False}
            continue
        started = time.perf_counter()
        progress(f"{name}: start")
        try:
            report[name] = run()
        except Exception as error:  # noqa: BLE001 - a campaign that cannot run misses its target
            report[name] = {"error": f"{type(error).__name__}: {error}", "ok": False}
        report[name]["seconds"] = round(time.perf_counter() - started, 1)
    report["all_targets_met"] = all(report[name]["ok"] for name in campaigns)
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))
    return 0 if report["all_targets_met"] else 1
