"""``memdesk``: with no sub-command, the desktop window; otherwise terminal commands.

Every error a user can cause or meet is a MemDeskError: printed as one line, exit code 1.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from memdesk import __version__
from memdesk.cli.terminal import visible_output
from memdesk.core.base.errors import MemDeskError
from memdesk.core.base.private_files import private_umask
from memdesk.core.base.process_guard import guard_process


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memdesk", description="An offline companion with long-term memory.")
    parser.add_argument("--log-level", default="WARNING", help="logging level (DEBUG, INFO, WARNING)")
    parser.add_argument("--version", action="version", version=f"memdesk {__version__}")
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="prove this install works (temporary home, both models, one agent turn) and exit",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    from memdesk.cli import (
        agents_cmd,
        backup_cmd,
        chat_cmd,
        consolidate_cmd,
        doctor_cmd,
        encrypt_cmd,
        evaluate,
        folder_cmd,
        forget_cmd,
        graph_cmd,
        import_cmd,
        ingest,
        learned_cmd,
        models_cmd,
        settings_cmd,
        sync_cmd,
        warm_cmd,
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
    sync_cmd.add_command(commands)
    import_cmd.add_command(commands)
    folder_cmd.add_command(commands)
    learned_cmd.add_command(commands)
    commands.add_parser("gui", help="open the desktop window (the default)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Text from imported files and the model reaches the terminal escaped, log lines included.
    with visible_output():
        logging.basicConfig(
            level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
            format="%(levelname)s %(name)s: %(message)s",
        )
        # Passphrases, tokens and the store's descriptor stay out of reach of other processes (an
        # imported tool's included) and out of core files.
        guard_process()
        with private_umask():  # what MemDesk writes (store, logs, caches, exports) is the user's only
            return _main(args)


def _main(args: argparse.Namespace) -> int:
    try:
        if args.self_test:
            from memdesk.diagnostics.selftest import run

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
    return run_window([])


def _import_window():
    from memdesk.ui.startup import main as window_main  # written out, so that PyInstaller's analysis finds it

    return window_main


def run_window(
    argv: list[str],
    *,
    on_first_window: Callable[[object], None] | None = None,
    on_window: Callable[[object], None] | None = None,
) -> int:
    """What ``memdesk`` with no command runs (the start-up benchmarks start the window through it
    too). Order matters: the model's process starts first (memdesk.app.local_model), then the first
    window shows with Send working (memdesk/ui/first_window.py), then the rest of the window is
    imported while that one takes input, and the main window takes its place. ``argv``: the
    window's own flags (see memdesk.ui.startup.main); ``on_first_window`` is called with the first window
    once it shows (a benchmark types into it), ``on_window`` with each main window (a program that
    drives it: memdesk.ui.startup.main.run)."""
    from memdesk.app.local_model import settings_before_opening, start_with
    from memdesk.core.base.paths import Paths

    try:
        paths: Paths | None = Paths.from_environment()
    except MemDeskError:
        paths = None  # the window says what is wrong with the data folder
    settings = settings_before_opening(paths) if paths is not None else None
    model_ahead = start_with(settings)  # read once: the first window stands where they say
    first = None
    try:
        from memdesk.ui.startup import first_window

        if paths is not None:
            first = first_window.open_first_window(paths, settings, first_window.milestones("--timing" in argv))
        if first is not None and on_first_window is not None:
            on_first_window(first)
        window_main = first_window.while_shown(_import_window, first)
    except ModuleNotFoundError as error:
        if model_ahead is not None:
            model_ahead.discard()
        if not (error.name or "").startswith(("memdesk.ui", "PySide6")):
            raise
        # The window is not available (no Qt installed): the terminal chat is the fallback.
        print("memdesk: the desktop window is not available here; starting the terminal chat.", file=sys.stderr)
        return main(["chat"])
    return window_main.run(argv, model_ahead=model_ahead, first=first, on_window=on_window)


if __name__ == "__main__":
    sys.exit(main())
