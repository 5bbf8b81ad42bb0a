"""``memdesk settings [NAME [VALUE]]``: show or change a setting."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from desktop.cli.passphrase import open_store_services
from desktop.core.net.plain_http import plain_http_warning
from desktop.settings import DESCRIPTIONS, Settings


def add_command(commands) -> None:
    parser = commands.add_parser("settings", help="show or change settings")
    parser.add_argument("name", nargs="?")
    parser.add_argument("value", nargs="?")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        if args.name and args.value is not None:
            settings = services.settings_store.set(args.name, args.value)
            _warn_about(args.name, settings)
        else:
            settings = services.settings
        for name, value in asdict(settings).items():
            if args.name and name != args.name:
                continue
            shown = ",".join(value) if isinstance(value, (list, tuple)) else value
            if name == "window_layout" and value and not args.name:  # Qt's state, not for reading
                shown = f"(saved: {len(value)} characters; set it to \"\" for the default layout)"
            print(f"{name} = {shown}\t# {DESCRIPTIONS.get(name, '')}")
        print(f"# data folder: {services.paths.home}")
    return 0


def _warn_about(name: str, settings: Settings) -> None:
    """Said when the server URL is set, and when the runtime that uses it is chosen."""
    if name == "openai_base_url" or (name == "runtime" and settings.runtime == "openai"):
        if warning := plain_http_warning(settings.openai_base_url):
            print(f"memdesk: warning: {warning}", file=sys.stderr)
