"""``memdesk learned``: review what MemDesk learned about you from imported conversations.

memdesk learned [--agent NAME] [--all]        the proposals waiting, each with its sources
memdesk learned accept ID [--text TEXT]       write it (or your edit of it) into core memory
memdesk learned reject ID                     never propose it again
memdesk learned propose [--agent NAME]        read the imported conversations again now

Nothing enters core memory unless accepted here or in the window; an accepted one is in Memory
history like any edit (`memdesk history NAME --revert ID` takes it back).
"""

from __future__ import annotations

import argparse

from memdesk.cli.import_cmd import agent_for
from memdesk.cli.passphrase import open_store_services as open_services
from memdesk.core.base.clock import day_month_year
from memdesk.core.transfer.history.learning import ACCEPTED, PENDING, REJECTED, SUPERSEDED, Learning

#: Characters of a source message shown.
SOURCE_CHARS = 100


def add_command(commands) -> None:
    parser = commands.add_parser("learned", help="review what MemDesk learned about you from imported conversations")
    parser.add_argument("--agent", help="the agent (default: the only one)")
    parser.add_argument("--all", action="store_true", help="also the accepted, rejected and replaced ones")
    parser.set_defaults(handler=_list)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    accept = actions.add_parser("accept", help="write a proposal into core memory")
    accept.add_argument("id", type=int)
    accept.add_argument("--text", help="your edit of it, written instead")
    accept.set_defaults(handler=_accept)
    reject = actions.add_parser("reject", help="reject a proposal")
    reject.add_argument("id", type=int)
    reject.set_defaults(handler=_reject)
    propose = actions.add_parser("propose", help="read the imported conversations for new proposals now")
    propose.add_argument("--agent", dest="agent_name", help="the agent (default: the only one)")
    propose.set_defaults(handler=_propose)


def _learning(services) -> Learning:
    return Learning(services.memory, user_name=services.settings.user_name)


def _list(args: argparse.Namespace) -> int:
    with open_services() as services:
        record = agent_for(services, args.agent)
        learning = _learning(services)
        statuses = (PENDING, ACCEPTED, REJECTED, SUPERSEDED) if args.all else (PENDING,)
        proposals = learning.listed(record.id, statuses)
        if not proposals:
            print(
                f"Nothing waits for review for {record.name}."
                + ("" if args.all else " (`memdesk import` brings conversations to learn from.)")
            )
            return 0
        print(f"What MemDesk learned from your imported conversations ({record.name}):")
        for proposal in proposals:
            state = "" if proposal.status == PENDING else f"  [{proposal.status}]"
            print(f"  {proposal.id:>5}  {proposal.text}{state}")
            for at, where, text in learning.sources(proposal):
                said = " ".join(text.split())
                said = said if len(said) <= SOURCE_CHARS else said[: SOURCE_CHARS - 1] + "…"
                print(f"           from {day_month_year(at)}, {where}: {said}")
        print("Accept with `memdesk learned accept ID` (--text for your own wording), or `memdesk learned reject ID`.")
        return 0


def _accept(args: argparse.Namespace) -> int:
    with open_services() as services:
        proposal = _learning(services).accept(args.id, args.text)
        print(f"Added to the {proposal.label} block: {proposal.text}")
        if proposal.change_id:
            agent = services.agents.get(proposal.agent_id).name
            undo = f"memdesk history {agent} --revert {proposal.change_id}"
            print(f"(Memory history change {proposal.change_id}; undo with `{undo}`.)")
        return 0


def _reject(args: argparse.Namespace) -> int:
    with open_services() as services:
        proposal = _learning(services).reject(args.id)
        print(f"Rejected: {proposal.text}")
        return 0


def _propose(args: argparse.Namespace) -> int:
    with open_services() as services:
        record = agent_for(services, args.agent_name or args.agent)
        waiting = _learning(services).propose(record.id)
        print(f"{waiting} proposals wait for review: memdesk learned --agent {record.name}")
        return 0
