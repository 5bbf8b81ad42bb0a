"""``memdesk doctor [--json] [--check NAME]``: one line per check; exit 0 when all pass, else 1."""

from __future__ import annotations

import argparse
import json

from memdesk.core.base.paths import Paths
from memdesk.diagnostics import CHECK_NAMES, Check, run_checks


def add_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("doctor", help="check whether this machine can run MemDesk, and why not")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--check",
        action="append",
        choices=CHECK_NAMES,
        metavar="NAME",
        help=f"run only this check (repeatable): {', '.join(CHECK_NAMES)}",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    def show(check: Check) -> None:
        print(check.line(), flush=True)  # a line as each check ends: the decode and embedder take seconds

    report = run_checks(Paths.from_environment(), only=args.check, on_check=None if args.json else show)
    print(json.dumps(report.as_json()) if args.json else report.summary())
    return 0 if report.ok else 1
