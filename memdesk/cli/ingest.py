"""`memdesk ingest PATH... [--agent NAME] [--reembed]`: add documents to an agent's archival memory.

Prints one line per progress step and one per failed file with its reason. Exit code 0 when the
batch ran (even if some files failed: they are reported, not fatal), 1 when it could not run at all.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_ingest_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("ingest", help="add documents (files or folders) to an agent's archival memory")
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders to read")
    parser.add_argument("--agent", help="the agent's name (default: the only agent, if there is one)")
    parser.add_argument(
        "--reembed",
        action="store_true",
        help="switch this store to the current embedding model: drop all vectors and embed everything again",
    )
    parser.set_defaults(handler=run_ingest)
    return parser


def _agent_id(db, name: str | None) -> int:
    from memdesk.core.base.errors import AgentNotFoundError

    if name is not None:
        row = db.query_one("SELECT id FROM agents WHERE name = ?", (name,))
        if row is None:
            raise AgentNotFoundError(f"No agent named {name!r}", hint="`memdesk agents` lists them")
        return int(row[0])
    rows = db.query("SELECT id FROM agents ORDER BY id LIMIT 2")
    if len(rows) != 1:
        raise AgentNotFoundError(
            "Say which agent gets the documents" if rows else "There is no agent yet",
            hint="pass --agent NAME" if rows else "create one with `memdesk agents create NAME`",
        )
    return int(rows[0][0])


def _printer(stream):
    last = {"phase": None, "shown": -1}

    def show(event) -> None:
        # One line per file while reading; embedding prints about every tenth of the way.
        if event.phase == "embedding" and event.total and event.done < event.total:
            step = max(1, event.total // 10)
            if event.done // step == last["shown"] and last["phase"] == "embedding":
                return
            last["shown"] = event.done // step
        last["phase"] = event.phase
        eta = f", about {event.eta_seconds:.0f} s left" if event.eta_seconds else ""
        where = f": {event.current_file}" if event.current_file else ""
        unit = "files" if event.phase == "reading" else "chunks"
        if event.phase == "done":
            return
        print(f"[{event.phase}] {event.done}/{event.total} {unit}{eta}{where}", file=stream, flush=True)

    return show


def run_ingest(args: argparse.Namespace) -> int:
    from memdesk.cli.passphrase import open_store_services
    from memdesk.core.base.errors import MemDeskError
    from memdesk.core.documents.catalog import reembed_store

    try:
        with open_store_services() as services:
            agent_id = _agent_id(services.db, args.agent)
            if args.reembed:
                count = reembed_store(services.db, services.memory.archival)
                print(f"re-embedding {count} passages with {services.embedder.model_id}", flush=True)
            report = services.ingestor().ingest(args.paths, agent_id, _printer(sys.stdout))
    except MemDeskError as error:
        print(f"memdesk: {error.user_message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stopped; run the same command again to finish (nothing is duplicated)", file=sys.stderr)
        return 130
    for failure in report.failures:
        print(f"failed: {failure.path}: {failure.reason}", flush=True)
    print(
        f"done: {report.added} added, {report.replaced} replaced, {report.unchanged} unchanged, "
        f"{len(report.failures)} failed; {report.chunks} chunks stored, {report.embedded} embedded",
        flush=True,
    )
    return 0
