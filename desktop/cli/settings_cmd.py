"""``memdesk settings [NAME [VALUE]]``: show or change a setting."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from desktop.app import open_services
from desktop.settings import DESCRIPTIONS


def add_command(commands) -> None:
    parser = commands.add_parser("settings", help="show or change settings")
    parser.add_argument("name", nargs="?")
    parser.add_argument("value", nargs="?")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    services = open_services()
    try:
        if args.name and args.value is not None:
            settings = services.settings_store.set(args.name, args.value)
        else:
            settings = services.settings
        for name, value in asdict(settings).items():
            if args.name and name != args.name:
                continue
            shown = ",".join(value) if isinstance(value, (list, tuple)) else value
            print(f"{name} = {shown}\t# {DESCRIPTIONS.get(name, '')}")
        print(f"# data folder: {services.paths.home}")
    finally:
        services.close()
    return 0
