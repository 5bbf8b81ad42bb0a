"""``memdesk export --format folder DIR [--agent NAME]``: memory as a folder of Markdown a person can
read, keep in git and edit (every agent, or one); ``memdesk import DIR --apply`` brings such a
folder back (memdesk.cli.import_cmd hands it here), into an empty home too."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memdesk.app.operations import export_memory_folder, import_memory_folder
from memdesk.cli.passphrase import open_store_services as open_services
from memdesk.core.transfer.folder.reading import graph_edits, read_folder

PLAIN_TEXT_WARNING = (
    "Your store is encrypted, but the folder is plain text: anyone who can read {folder} can read"
    " everything in it. Keep it somewhere as private as the store."
)


def add_command(commands) -> None:
    parser = commands.add_parser("export", help="write memory out as a readable folder of Markdown files")
    parser.add_argument("folder", type=Path, metavar="DIR", help="a new or empty folder, or an earlier export")
    parser.add_argument("--format", choices=("folder",), default="folder", help="folder: Markdown files (the default)")
    parser.add_argument("--agent", help="only this agent (default: every agent)")
    parser.set_defaults(handler=run_export)


def run_export(args: argparse.Namespace) -> int:
    with open_services() as services:
        records = [services.agents.get_by_name(args.agent)] if args.agent else services.agents.list()
        if not records:
            print("There are no agents to export yet.")
            return 0
        if services.key is not None:
            print(PLAIN_TEXT_WARNING.format(folder=args.folder), file=sys.stderr)
        written = export_memory_folder(services, [r.id for r in records], args.folder)
        names = ", ".join(r.name for r in records)
        print(f"Wrote {len(written)} files for {names} into {args.folder} (README.md says what is where).")
        return 0


def run_folder_import(args: argparse.Namespace) -> int:
    document = read_folder(args.path)
    agents = document.get("agents", [])
    if not args.apply:
        print(f"{args.path}: a MemDesk memory folder with {len(agents)} agent(s):")
        for agent, facts in zip(agents, graph_edits(args.path, document), strict=True):
            blocks = len(agent.get("block_ids", []))
            messages = max(0, len(agent.get("messages", [])) - 1)
            edited = f", {len(facts)} graph fact line(s) changed or added" if facts else ""
            print(f"  {agent.get('name')}: {blocks} core memory blocks, {messages} messages{edited}")
        print("Run again with --apply to bring them back as new agents (a name taken gets a number).")
        return 0
    with open_services() as services:
        summary = import_memory_folder(services, args.path)
        for agent in summary.agents:
            print(f"Imported {agent.line()}")
        for fix in summary.fixups:
            print(f"  note: {fix}")
        return 0
