"""Issue 19's figures in one JSON object: what encryption, backups and forget cost.

    python -m bench.privacy --json            # full sizes (a 1 GB store, 100,000 messages)
    python -m bench.privacy --json --quick    # small sizes, for a check in minutes

Each part is measured by its own module (bench/privacy_encryption.py, privacy_backup.py,
privacy_forget.py, privacy_private.py), every figure a ratio against a plain store measured in the same run or an
absolute count the issue names; this script runs them in turn and says whether each goal was met.
"""

from __future__ import annotations

import json
import sys

from bench import privacy_backup, privacy_encryption, privacy_forget, privacy_private
from bench.common import bench_parser

#: The issue's goals: key -> (comparison, bound).
GOALS = {
    "open_time_ratio": ("<=", 1.15),
    "search_p50_ratio": ("<=", 1.15),
    "ingest_throughput_ratio": (">=", 1 / 1.15),
    "turn_time_ratio": ("<=", 1.15),
    "timer_lateness_p99_ms": ("<=", 30.0),
    "residual_occurrences": ("<=", 0),
}


def goals_met(figures: dict) -> dict[str, bool]:
    met = {}
    for key, (op, bound) in GOALS.items():
        value = figures.get(key)
        if isinstance(value, (int, float)):
            met[key] = value <= bound if op == "<=" else value >= bound
    return met


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, prog="bench.privacy")
    parser.add_argument("--quick", action="store_true", help="small sizes")
    args = parser.parse_args(argv)
    report: dict = {"quick": args.quick}
    parts = {
        "encryption": lambda: privacy_encryption.measure(args.quick),
        "backup": lambda: privacy_backup.measure(args.quick),
        "forget": lambda: privacy_forget.measure(args.quick),
        "private": lambda: privacy_private.measure((5,) if args.quick else (50, 500), 1 if args.quick else 3),
    }
    for name, measure in parts.items():
        report[name] = measure()
    flat = {key: value for name in parts for key, value in report[name].items()}
    report["goals_met"] = goals_met(flat)
    print(json.dumps(report, indent=None if args.json else 2))
    return 0 if all(report["goals_met"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
