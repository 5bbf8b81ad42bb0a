"""``memdesk agents`` (list, create, delete) and ``memdesk memory NAME``."""

from __future__ import annotations

import argparse

from desktop.app import open_services


def add_commands(commands) -> None:
    agents = commands.add_parser("agents", help="list, create and delete agents")
    actions = agents.add_subparsers(dest="action", metavar="ACTION")
    agents.set_defaults(handler=_list)
    actions.add_parser("list", help="list agents (the default)").set_defaults(handler=_list)
    create = actions.add_parser("create", help="create an agent")
    create.add_argument("name")
    create.add_argument("--persona", help="persona text (default: desktop/resources/prompts/persona.txt)")
    create.add_argument("--human", help="text about the user (default: desktop/resources/prompts/human.txt)")
    create.set_defaults(handler=_create)
    delete = actions.add_parser("delete", help="delete an agent and everything it remembers")
    delete.add_argument("name")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    delete.set_defaults(handler=_delete)

    memory = commands.add_parser("memory", help="print an agent's core memory and memory counts")
    memory.add_argument("name")
    memory.set_defaults(handler=_memory)


def _services():
    # The hashing embedder is never needed to list or print; the real one loads lazily anyway.
    return open_services()


def _list(args: argparse.Namespace) -> int:
    services = _services()
    try:
        records = services.agents.list()
        if not records:
            print("No agents yet. Create one with: memdesk agents create NAME")
        for record in records:
            count = services.memory.recall.count(record.id)
            print(f"{record.name}\t{count} messages\tcreated {record.created_at:%Y-%m-%d}")
    finally:
        services.close()
    return 0


def _create(args: argparse.Namespace) -> int:
    services = _services()
    try:
        record = services.create_agent(args.name, persona=args.persona, human=args.human)
        print(f"Created agent {record.name}")
    finally:
        services.close()
    return 0


def _delete(args: argparse.Namespace) -> int:
    services = _services()
    try:
        record = services.agents.get_by_name(args.name)
        if not args.yes:
            answer = input(f"Delete {record.name} and all it remembers? [y/N] ").strip().lower()
            if answer not in ("y", "yes"):
                print("Kept.")
                return 1
        services.agents.delete(record.id)
        print(f"Deleted agent {record.name}")
    finally:
        services.close()
    return 0


def _memory(args: argparse.Namespace) -> int:
    services = _services()
    try:
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
    finally:
        services.close()
    return 0
