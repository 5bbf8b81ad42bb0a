"""``memdesk import PATH [--agent NAME] [--apply]``: bring conversations from other assistants
(a ChatGPT or Claude export, an Open WebUI chat export, Markdown or text transcripts) into an
agent's recall memory, or a MemDesk memory folder back into the store.

Without ``--apply`` it only shows what would come in (as ``memdesk forget`` does): conversations,
messages, dates, the newest titles, what is already there, what would be left out and why.
``--since``, ``--until`` and ``--title`` choose conversations. With ``--apply`` it imports, showing
progress; Ctrl+C stops it, and the same command goes on where it stopped.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import date
from pathlib import Path

from memdesk.app.operations import import_history, propose_from_imports
from memdesk.cli.passphrase import open_store_services as open_services
from memdesk.core.base.errors import AgentNotFoundError, MemDeskError
from memdesk.core.transfer.history.preview import Selection, describe
from memdesk.core.transfer.history.reading import sniff

#: Seconds between two progress lines.
PROGRESS_EVERY = 2.0


def add_command(commands) -> None:
    parser = commands.add_parser(
        "import",
        help="import conversations from ChatGPT, Claude, Open WebUI or transcripts, or a memory folder"
        " (previews unless --apply)",
    )
    parser.add_argument("path", type=Path, metavar="PATH", help="an export (zip or JSON), a transcript, or a folder")
    parser.add_argument("--agent", help="the agent whose memory receives them (default: the only one)")
    parser.add_argument("--apply", action="store_true", help="import (without this, only show what would come in)")
    parser.add_argument(
        "--since", type=date.fromisoformat, metavar="YYYY-MM-DD", help="only conversations from then on"
    )
    parser.add_argument("--until", type=date.fromisoformat, metavar="YYYY-MM-DD", help="only conversations until then")
    parser.add_argument(
        "--title",
        action="append",
        default=[],
        metavar="TEXT",
        help="only conversations whose title holds TEXT (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=run_import)


def agent_for(services, name: str | None):
    if name:
        return services.agents.get_by_name(name)
    records = services.agents.list()
    if len(records) == 1:
        return records[0]
    raise AgentNotFoundError(
        "Say which agent receives them" if records else "There is no agent yet",
        hint="pass --agent NAME" if records else "create one with `memdesk agents create NAME`",
    )


def run_import(args: argparse.Namespace) -> int:
    if sniff(args.path) == "memory-folder":
        from memdesk.cli.folder_cmd import run_folder_import

        return run_folder_import(args)
    selection = Selection(args.since, args.until, tuple(args.title))
    with open_services() as services:
        record = agent_for(services, args.agent)
        work = import_history(services, record.id, args.path, selection, apply=args.apply, progress=_reading)
        preview = work.preview
        if not args.apply:
            if args.json:
                print(json.dumps({"agent": record.name, "applied": False, **preview.as_dict()}, ensure_ascii=False))
            else:
                print("\n".join(describe(preview)))
                print(f"Run again with --apply to import into {record.name}'s memory.")
            return 0
        if not args.json:
            print("\n".join(describe(preview)), flush=True)
        assert work.job is not None
        shown = 0.0
        try:
            for progress in work.job.steps():
                if not args.json and time.monotonic() - shown >= PROGRESS_EVERY:
                    shown = time.monotonic()
                    print(f"  importing: {progress.describe()}", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            work.job.stop()
            print(
                "stopped; run the same command again to go on where it stopped (nothing is added twice)",
                file=sys.stderr,
            )
            return 130
        except MemDeskError:
            work.job.stop()
            raise
        proposals = propose_from_imports(services, record.id)
        report = work.report()
        if args.json:
            print(
                json.dumps(
                    {"agent": record.name, "applied": True, **report, "proposals": proposals}, ensure_ascii=False
                )
            )
            return 0
        print(
            f"Imported {report['conversations_added']:,} conversations ({report['messages_added']:,} new messages)"
            f" into {record.name}'s memory; they are searchable now."
        )
        for line in report["skipped"]:
            print(f"  left out: {line}")
        if proposals:
            print(
                f"{proposals} things MemDesk learned about you wait for your review:"
                f" memdesk learned --agent {record.name}"
            )
        return 0


_shown = {"at": time.monotonic()}


def _reading(share: float) -> None:
    """The preview's progress, every few seconds on a long read."""
    if time.monotonic() - _shown["at"] >= PROGRESS_EVERY:
        _shown["at"] = time.monotonic()
        print(f"  reading: {share:.0%}", file=sys.stderr, flush=True)
