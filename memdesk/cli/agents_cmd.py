"""``memdesk agents`` (list, create, delete, export, import, tools), ``memdesk memory NAME`` (and
``--edit BLOCK --append TEXT``) and ``memdesk history NAME`` (the memory history, with revert)."""

from __future__ import annotations

import argparse
from pathlib import Path

from memdesk.app.operations import agent_file_options, import_agent_path
from memdesk.cli.passphrase import open_store_services
from memdesk.cli.terminal import ask
from memdesk.core.base.errors import MemDeskError
from memdesk.core.memory.diff import unified
from memdesk.core.memory.history import GRAPH_ENTITY, GRAPH_FACT, KINDS, Cause
from memdesk.core.memory.revert import Reverter
from memdesk.core.tools.imported import ImportedTools, enabling_means, reserved_names, runnable_problem
from memdesk.core.transfer.agentfile import FORMATS, export_path


def add_commands(commands) -> None:
    agents = commands.add_parser("agents", help="list, create and delete agents")
    actions = agents.add_subparsers(dest="action", metavar="ACTION")
    agents.set_defaults(handler=_list)
    actions.add_parser("list", help="list agents (the default)").set_defaults(handler=_list)
    create = actions.add_parser("create", help="create an agent")
    create.add_argument("name")
    create.add_argument("--persona", help="persona text (default: memdesk/resources/prompts/persona.txt)")
    create.add_argument("--human", help="text about the user (default: memdesk/resources/prompts/human.txt)")
    create.set_defaults(handler=_create)
    delete = actions.add_parser("delete", help="delete an agent and everything it remembers")
    delete.add_argument("name")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    delete.set_defaults(handler=_delete)
    export = actions.add_parser("export", help="save an agent to a file (Letta .af by default)")
    export.add_argument("name")
    export.add_argument("file", type=Path)
    export.add_argument(
        "--format", choices=FORMATS, default="af", help="af: Letta agent file (default); json: MemDesk's own JSON"
    )
    export.set_defaults(handler=_export)
    imports = actions.add_parser("import", help="load agents from a Letta .af file or a MemDesk export")
    imports.add_argument("file", type=Path)
    imports.add_argument("--name", help="name of the new agent (files with one agent only)")
    imports.set_defaults(handler=_import)
    tools = actions.add_parser("tools", help="list the tools an imported agent file brought; enable or disable one")
    tools.add_argument("name")
    tools.add_argument("--show", metavar="TOOL", help="print a tool's code")
    tools.add_argument("--enable", metavar="TOOL", help="let the agent use a tool (shows its code and asks first)")
    tools.add_argument("--disable", metavar="TOOL")
    tools.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    tools.set_defaults(handler=_tools)

    memory = commands.add_parser(
        "memory", help="print an agent's core memory and memory counts, or edit a block (--edit BLOCK --append TEXT)"
    )
    memory.add_argument("name")
    memory.add_argument("--edit", metavar="BLOCK", help="the core memory block to edit")
    memory.add_argument("--append", metavar="TEXT", help="add TEXT as a new line at the end of the block")
    memory.set_defaults(handler=_memory)

    history = commands.add_parser("history", help="print how an agent's memory changed, and revert a change")
    history.add_argument("name")
    history.add_argument("--block", help="only this core memory block")
    history.add_argument(
        "--kind",
        choices=[*KINDS, "graph"],
        help="only changes of this kind (graph: knowledge-graph facts and entities)",
    )
    history.add_argument("--limit", type=int, default=20, help="how many changes (newest first; default 20)")
    history.add_argument("--diff", action="store_true", help="show each change's text before and after")
    history.add_argument("--revert", type=int, metavar="ID", help="revert change ID (itself recorded)")
    history.add_argument(
        "--force", action="store_true", help="revert even over later changes (after seeing the conflict)"
    )
    history.set_defaults(handler=_history)


def _services():
    # The hashing embedder is never needed to list or print; the real one loads lazily anyway.
    return open_store_services()


def _list(args: argparse.Namespace) -> int:
    with _services() as services:
        records = services.agents.list()
        if not records:
            print("No agents yet. Create one with: memdesk agents create NAME")
        for record in records:
            count = services.memory.recall.count(record.id)
            print(f"{record.name}\t{count} messages\tcreated {record.created_at:%Y-%m-%d}")
    return 0


def _create(args: argparse.Namespace) -> int:
    with _services() as services:
        record = services.create_agent(args.name, persona=args.persona, human=args.human)
        print(f"Created agent {record.name}")
    return 0


def _delete(args: argparse.Namespace) -> int:
    with _services() as services:
        record = services.agents.get_by_name(args.name)
        if not args.yes:
            answer = ask(f"Delete {record.name} and all it remembers? [y/N] ").strip().lower()
            if answer not in ("y", "yes"):
                print("Kept.")
                return 1
        services.agents.delete(record.id)
        print(f"Deleted agent {record.name}")
    return 0


def _memory(args: argparse.Namespace) -> int:
    if args.edit or args.append is not None:
        return _edit_block(args)
    with _services() as services:
        record = services.agents.get_by_name(args.name)
        m = services.memory
        for block in m.core.blocks(record.id):
            flag = " (read-only)" if block.read_only else ""
            print(f"[{block.label}] {block.chars}/{block.limit} characters{flag}")
            print(block.value)
            print()
        print(f"recall memory: {m.recall.count(record.id)} messages ({record.evicted_count} out of context)")
        print(f"archival memory: {m.archival.count(record.id)} passages")
        if record.summary:
            print(f"summary: {record.summary}")
    return 0


def _edit_block(args: argparse.Namespace) -> int:
    """A user's edit, as the window's editor makes it: recorded in the memory history, refused over
    the block's limit, and sent to paired devices at the next sync."""
    if not args.edit or args.append is None:
        raise MemDeskError("Editing a block needs both --edit BLOCK and --append TEXT")
    if not args.append.strip():
        raise MemDeskError("Nothing to append: the text is empty")
    with _services() as services:
        record = services.agents.get_by_name(args.name)
        core = services.memory.core
        block = core.get(record.id, args.edit)
        if block is None:
            labels = ", ".join(b.label for b in core.blocks(record.id)) or "none"
            raise MemDeskError(f"{record.name} has no memory block named {args.edit!r} (blocks: {labels})")
        value = f"{block.value}\n{args.append}" if block.value else args.append
        changed = core.set_value(
            record.id, block.label, value, expected_version=block.version, cause=Cause(note="the terminal")
        )
        print(f"[{changed.label}] {changed.chars}/{changed.limit} characters")
    return 0


def _export(args: argparse.Namespace) -> int:
    with _services() as services:
        record = services.agents.get_by_name(args.name)
        options = agent_file_options(services) if args.format == "af" else {}
        path = export_path(services, record.id, args.file, args.format, **options)
        print(f"Exported {record.name} to {path}")
    return 0


def _import(args: argparse.Namespace) -> int:
    with _services() as services:
        summary = import_agent_path(services, args.file, name=args.name)
        print(summary.text())
        if any(agent.tools_disabled for agent in summary.agents):
            print("Imported tools stay disabled until you enable them: memdesk agents tools NAME --enable TOOL")
    return 0


def _tools(args: argparse.Namespace) -> int:
    with _services() as services:
        record = services.agents.get_by_name(args.name)
        store = ImportedTools(services.db, services.clock)
        if args.show or args.enable:
            tool = store.get(record.id, args.show or args.enable)
            if tool is None:
                print(f"{record.name} has no imported tool named {args.show or args.enable}")
                return 1
            print(
                f"# {tool.name} ({tool.origin}):"
                f" {tool.description.strip().splitlines()[0] if tool.description.strip() else ''}"
            )
            print(tool.source_code)
            if args.enable:
                problem = runnable_problem(tool, reserved_names())
                if problem:  # said before asking: a yes would change nothing
                    print(f"Cannot enable {tool.name}: {problem}")
                    return 1
                if not args.yes:
                    answer = ask(f"{enabling_means(tool.name)} [y/N] ").strip().lower()
                    if answer not in ("y", "yes"):
                        print("Left disabled.")
                        return 1
                store.set_enabled(record.id, tool.name, True)
                print(f"Enabled {tool.name}")
            return 0
        if args.disable:
            store.set_enabled(record.id, args.disable, False)
            print(f"Disabled {args.disable}")
            return 0
        tools = store.list(record.id)
        if not tools:
            print(f"{record.name} has no imported tools")
        for tool in tools:
            state = "enabled" if tool.enabled else "disabled"
            print(f"{tool.name}\t{state}\t{tool.origin}\t{len(tool.source_code.splitlines())} lines of code")
    return 0


def _history(args: argparse.Namespace) -> int:
    with _services() as services:
        record = services.agents.get_by_name(args.name)
        core = services.memory.core
        if args.revert is not None:
            reverter = Reverter(core.history, core, services.memory.archival, services.memory.graph)
            plan = reverter.plan(args.revert)
            if plan.conflict and not args.force:
                print(plan.explain())
                print("Nothing changed. Run again with --force to revert anyway.")
                return 1
            change = reverter.apply(plan, force=args.force)
            print(f"Reverted change {args.revert} (recorded as change {change.id})")
            return 0
        if args.block:
            changes = core.history.for_block(record.id, args.block, limit=args.limit)
        elif args.kind == "graph":
            both = core.history.for_agent(record.id, kind=GRAPH_FACT, limit=args.limit) + core.history.for_agent(
                record.id, kind=GRAPH_ENTITY, limit=args.limit
            )
            changes = sorted(both, key=lambda c: -c.id)[: args.limit]
        else:
            changes = core.history.for_agent(record.id, kind=args.kind, limit=args.limit)
        if not changes:
            print("No memory changes recorded yet.")
        for change in changes:
            why = (
                f" (message {change.message_id})" if change.message_id else (f" ({change.note})" if change.note else "")
            )
            print(f"{change.id}\t{change.at:%Y-%m-%d %H:%M}\t{change.describe()}{why}")
            if args.diff:
                print(unified(change.before or "", change.after or "", indent="    "))
    return 0
