"""``memdesk``: with no sub-command, the desktop window; otherwise terminal commands.

Every error a user can cause or meet is a MemDeskError: printed as one line, exit code 1.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from desktop import __version__
from desktop.errors import MemDeskError
from desktop.private_files import private_umask


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memdesk", description="An offline companion with long-term memory.")
    parser.add_argument("--log-level", default="WARNING", help="logging level (DEBUG, INFO, WARNING)")
    parser.add_argument("--version", action="version", version=f"memdesk {__version__}")
    parser.add_argument("--self-test", action="store_true", help="prove this install works (temporary home, both models, one agent turn) and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    from desktop.cli import (
        agents_cmd, backup_cmd, chat_cmd, consolidate_cmd, doctor_cmd, encrypt_cmd, evaluate, forget_cmd, graph_cmd, ingest, models_cmd,
        settings_cmd, warm_cmd,
    )

    chat_cmd.add_command(commands)
    agents_cmd.add_commands(commands)
    settings_cmd.add_command(commands)
    models_cmd.add_command(commands)
    ingest.add_ingest_command(commands)
    evaluate.add_eval_command(commands)
    consolidate_cmd.add_command(commands)
    graph_cmd.add_command(commands)
    forget_cmd.add_command(commands)
    doctor_cmd.add_command(commands)
    warm_cmd.add_command(commands)
    backup_cmd.add_command(commands)
    encrypt_cmd.add_command(commands)
    commands.add_parser("gui", help="open the desktop window (the default)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.WARNING), format="%(levelname)s %(name)s: %(message)s")
    with private_umask():  # what MemDesk writes (store, logs, caches, exports) is the user's only
        return _main(args)


def _main(args: argparse.Namespace) -> int:
    try:
        if args.self_test:
            from desktop.diagnostics.selftest import run

            return run()
        if args.command in (None, "gui"):
            return _run_gui()
        return int(args.handler(args) or 0)
    except MemDeskError as error:
        print(f"memdesk: {error.user_message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130


def _run_gui() -> int:
    from desktop.local_model import start_ahead

    # The model loads while Qt and the window are imported and built (see desktop.local_model).
    model_ahead = start_ahead()
    try:
        from desktop.ui.main import run
    except ModuleNotFoundError as error:
        if model_ahead is not None:
            model_ahead.discard()
        if not (error.name or "").startswith(("desktop.ui", "PySide6")):
            raise
        # The window is not available (no Qt installed): the terminal chat is the fallback.
        print("memdesk: the desktop window is not available here; starting the terminal chat.", file=sys.stderr)
        return main(["chat"])
    return run([], model_ahead=model_ahead)


if __name__ == "__main__":
    sys.exit(main())
