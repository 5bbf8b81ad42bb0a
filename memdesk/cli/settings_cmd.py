"""``memdesk settings [NAME [VALUE]]``: show or change a setting. The list comes from the
settings' one declaration (memdesk/core/base/settings_table.py): each line says what the setting does,
the values it takes, its default when another is set, and its flags; a value is checked against
the same declaration as the window's."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memdesk.cli.passphrase import open_store_services
from memdesk.core.base.errors import ConfigError
from memdesk.core.base.settings_table import FLAG_WORDS, SETTINGS, Declared, Settings, declared
from memdesk.core.net.plain_http import plain_http_warning


def add_command(commands) -> None:
    parser = commands.add_parser(
        "settings", help="show or change settings (each with what it does, its values and flags)"
    )
    parser.add_argument("name", nargs="?")
    parser.add_argument("value", nargs="?")
    parser.add_argument(
        "--reset",
        action="store_true",
        help="set NAME back to its default (the model's catalog entry may refine it again)",
    )
    parser.add_argument("--json", action="store_true", help="every setting's value and declaration, for scripts")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    if args.name:
        declared(args.name)  # an unknown name fails before the store is opened
    if args.reset and (not args.name or args.value is not None):
        raise ConfigError(
            "--reset takes a setting's name and no value", hint="for example: memdesk settings temperature --reset"
        )
    with open_store_services() as services:
        if args.name and (args.value is not None or args.reset):
            before = services.settings
            if args.reset:
                settings = services.settings_store.reset(args.name)
            else:
                settings = services.settings_store.set(args.name, args.value)
            _warn_about(args.name, settings)
            if SETTINGS[args.name].restart and getattr(settings, args.name) != getattr(before, args.name):
                print(f"# {args.name} takes effect the next time the model loads (restart an open window)")
        else:
            settings = services.settings
        shown = [SETTINGS[args.name]] if args.name else list(SETTINGS.values())
        if args.json:
            print(json.dumps([_as_json(item, getattr(settings, item.name)) for item in shown], indent=2))
            return 0
        for item in shown:
            print(line_for(item, getattr(settings, item.name), whole=bool(args.name)))
        print(f"# data folder: {services.paths.home}")
    return 0


def line_for(item: Declared, value: Any, *, whole: bool = False) -> str:
    """``name = value\t# what it does (values; default) [flags]``; a secret's value is never shown,
    nor the window's saved layout unless asked for by name (``whole``)."""
    return f"{item.name} = {_value(item, value, whole=whole)}\t# {_about(item, value)}"


def _value(item: Declared, value: Any, *, whole: bool) -> str:
    if item.secret:
        return "(set)" if value else "(not set)"
    if item.name == "window_layout" and value and not whole:  # Qt's state, not for reading
        return f'(saved: {len(value)} characters; set it to "" for the default layout)'
    return ",".join(value) if isinstance(value, tuple) else str(value)


def _about(item: Declared, value: Any) -> str:
    """The description, then what it takes and its default when another value is set, then its flags."""
    notes = [item.allowed()]
    if value != item.default and not item.secret:
        notes.append("default " + (_value(item, item.default, whole=True) or '""'))
    notes = [note for note in notes if note]
    text = item.description + (f" ({'; '.join(notes)})" if notes else "")
    return text + (f" [{', '.join(FLAG_WORDS[flag] for flag in item.flags)}]" if item.flags else "")


def _as_json(item: Declared, value: Any) -> dict[str, Any]:
    return {
        "name": item.name,
        "value": None if item.secret else value,
        "default": None if item.secret else item.default,
        "type": item.kind.__name__ if item.kind is not tuple else "list",
        "description": item.description,
        "minimum": item.minimum,
        "maximum": item.maximum,
        "choices": list(item.choices) or None,
        "flags": list(item.flags),
    }


def _warn_about(name: str, settings: Settings) -> None:
    """Said when the server URL is set, and when the runtime that uses it is chosen."""
    if name == "openai_base_url" or (name == "runtime" and settings.runtime == "openai"):
        if warning := plain_http_warning(settings.openai_base_url):
            print(f"memdesk: warning: {warning}", file=sys.stderr)
