"""``memdesk consolidate``: run an idle-time consolidation pass now, and review what passes proposed.

memdesk consolidate run [--agent NAME] [--mode apply|ask]
memdesk consolidate list [--agent NAME] [--all]
memdesk consolidate apply ID... | --all [--agent NAME]
memdesk consolidate reject ID... | --all [--agent NAME]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from memdesk.app.agents import open_consolidator
from memdesk.app.runtimes import open_runtime
from memdesk.app.services import Services
from memdesk.cli.passphrase import open_store_services
from memdesk.core.base.errors import MemDeskError
from memdesk.core.consolidation.modes import APPLY, ASK, OFF
from memdesk.core.consolidation.store import PENDING
from memdesk.core.runtime.base import CancelToken


def add_command(commands) -> None:
    parser = commands.add_parser(
        "consolidate", help="run a memory consolidation pass, or review the changes passes proposed"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    run = actions.add_parser("run", help="consolidate the messages since the last pass now (loads the model)")
    run.add_argument(
        "--mode", choices=(APPLY, ASK), help="apply changes or propose them (default: the consolidation setting)"
    )
    listing = actions.add_parser(
        "list", help="changes waiting for review (the default), or every recent change with --all"
    )
    listing.add_argument("--all", action="store_true", help="recent changes of every status")
    for name, verb in (("apply", "apply proposed changes to memory"), ("reject", "reject proposed changes")):
        decide = actions.add_parser(name, help=verb)
        decide.add_argument("ids", nargs="*", type=int, metavar="ID", help="change numbers, as `list` shows them")
        decide.add_argument("--all", action="store_true", help="every change waiting for review")
    for action in (run, listing, *[actions.choices[n] for n in ("apply", "reject")]):
        action.add_argument("--agent", help="agent name (default: the last one used)")
    run.set_defaults(handler=_run)
    listing.set_defaults(handler=_list)
    actions.choices["apply"].set_defaults(handler=_decide, accept=True)
    actions.choices["reject"].set_defaults(handler=_decide, accept=False)


def _agent(services: Services, name: str | None):
    if name:
        return services.agents.get_by_name(name)
    last = services.settings.last_agent
    records = services.agents.list()
    if last and services.agents.find(last):
        return services.agents.find(last)
    if not records:
        raise MemDeskError("No agents yet", hint="create one with: memdesk agents create NAME")
    return records[0]


def _run(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        record = _agent(services, args.agent)
        settings = services.settings
        mode = args.mode or settings.consolidation
        if mode == OFF:
            print(
                "Consolidation is off; pass --mode ask or --mode apply, or: memdesk settings consolidation ask",
                file=sys.stderr,
            )
            return 1
        settings = replace(settings, consolidation=mode)
        if open_consolidator(services, record, None, settings=settings).new_user_turns() == 0 and not _unfinished(
            services, record
        ):
            print("Nothing new to consolidate since the last pass.")
            return 0
        print(f"Loading the model to consolidate {record.name}'s memory ({mode})...", file=sys.stderr)
        runtime = open_runtime(services, settings)
        try:
            result = open_consolidator(services, record, runtime, settings=settings).run(CancelToken())
        finally:
            runtime.close()
        print(result.describe())
        if result.proposed:
            print("Review them with: memdesk consolidate list")
    return 0


def _unfinished(services: Services, record) -> bool:
    return open_consolidator(services, record, None).store.unfinished(record.id) is not None


def _list(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        record = _agent(services, args.agent)
        pass_ = open_consolidator(services, record, None)
        changes = pass_.store.recent(record.id) if args.all else pass_.pending()
        if not changes:
            print("No memory changes waiting for review." if not args.all else "No consolidation changes yet.")
        for change in changes:
            status = "" if change.status == PENDING and not args.all else f"[{change.status}] "
            print(f"{change.id}\t{change.created_at:%Y-%m-%d %H:%M}\t{status}{change.describe()}")
            if args.all and change.status != PENDING and change.result:
                print(f"\t\t{change.result}")
    return 0


def _decide(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        record = _agent(services, args.agent)
        pass_ = open_consolidator(services, record, None)
        ids = [c.id for c in pass_.pending()] if args.all else args.ids
        if not ids:
            print("Name the changes (memdesk consolidate list shows them) or pass --all.", file=sys.stderr)
            return 2
        failed = 0
        for change_id in ids:
            change = pass_.accept(change_id) if args.accept else pass_.reject(change_id)
            failed += change.status == "failed"
            print(
                f"{change.id}\t{change.status}\t{change.describe()}"
                + (f"\t({change.result})" if change.status == "failed" else "")
            )
    return 1 if failed else 0
