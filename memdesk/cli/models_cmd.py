"""``memdesk models [list|get NAME|use NAME|remove NAME|servers] [--json]``.

``get`` downloads a catalog model (progress on stderr: bytes, speed, time left; Ctrl+C stops and
keeps what arrived for the next attempt). ``use`` switches the active model only after the new one
has passed its checks and loaded, so a model that fails leaves the previous one active. NAME is a
catalog id, a local model's name or file, a path to a .gguf, or ``ollama:MODEL`` /
``lmstudio:MODEL`` for a model served on this machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from dataclasses import replace

from memdesk.app.runtimes import open_runtime
from memdesk.app.services import Services, snapshot_before
from memdesk.cli.passphrase import open_store_services
from memdesk.cli.terminal import rewrite_line
from memdesk.core.base.errors import DownloadCancelled, ModelError, UnknownModelError
from memdesk.core.models.download import Downloader, DownloadProgress, format_bytes
from memdesk.core.models.hub import HubConfig
from memdesk.core.models.library import Choice
from memdesk.core.models.preflight import explain_load_failure
from memdesk.core.models.servers import KNOWN_SERVERS, choose_on_server, find_local_servers
from memdesk.core.runtime.base import CancelToken


def add_command(commands) -> None:
    parser = commands.add_parser("models", help="list, download, choose and remove models")
    parser.add_argument("--json", action="store_true", help="print JSON")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    parser.set_defaults(handler=_list)
    listing = actions.add_parser("list", help="catalog and local models, the active one marked (the default)")
    listing.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    listing.set_defaults(handler=_list)
    get = actions.add_parser("get", help="download a catalog model (verified; resumes an interrupted download)")
    get.add_argument("name")
    get.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    get.set_defaults(handler=_get)
    use = actions.add_parser("use", help="make a model the active one (checked and loaded first)")
    use.add_argument("name", help="catalog id, local name or file, path to a .gguf, or ollama:MODEL / lmstudio:MODEL")
    use.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    use.set_defaults(handler=_use)
    remove = actions.add_parser("remove", help="delete a downloaded model file (not the active one)")
    remove.add_argument("name")
    remove.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    remove.set_defaults(handler=_remove)
    servers = actions.add_parser("servers", help="look for Ollama and LM Studio on this machine (loopback only)")
    servers.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    servers.set_defaults(handler=_servers)


def _list(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        settings = services.settings
        rows = services.models.overview(settings)
        context = settings.context_size
        if args.json:
            print(
                json.dumps(
                    {
                        "active": services.models.active(settings),
                        "context_size": context,
                        "models": [r.as_dict(context) for r in rows],
                    },
                    indent=2,
                )
            )
            return 0
        print(f"Active model: {services.models.active(settings)}")
        print(f"{'':2}{'ID':26}{'STATUS':12}{'SIZE':>10}{'RAM*':>10}  {'CONTEXT':>8}  {'LICENCE':30}GOOD FOR")
        for row in rows:
            ram = row.ram_estimate(context)
            star = " ".join(f"[best for {tier.upper()}]" for tier in (row.entry.recommended_for if row.entry else ()))
            print(
                f"{'*' if row.active else ' ':2}{row.id[:25]:26}{row.kind:12}{format_bytes(row.size):>10}"
                f"{format_bytes(ram) if ram else '?':>10}  {row.context_length or '?':>8}  {row.licence[:29]:30}"
                f"{(row.entry.good_for if row.entry else '')} {star}".rstrip()
            )
        print(f"* active. RAM*: the file plus its KV cache at your context size ({context} tokens).")
        print("Download with `memdesk models get ID`; switch with `memdesk models use ID`.")
    return 0


def _get(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        entry = services.models.catalog.find(args.name)
        if entry is None:
            raise UnknownModelError(
                f"No catalog model called {args.name!r}", hint="`memdesk models list` shows the catalog."
            )
        existing = services.models.installed(entry)
        if existing is not None:
            _say(
                args,
                {"installed": str(existing.path), "already": True},
                f"{entry.name} is already installed: {existing.path}",
            )
            return 0
        cancel = CancelToken()
        printer = _ProgressPrinter()
        try:
            result = Downloader(services.paths, HubConfig.from_environment()).download(
                entry, on_progress=printer, cancel=cancel
            )
        except KeyboardInterrupt:
            raise DownloadCancelled(
                f"Download of {entry.file} stopped", hint="What arrived is kept: run the same command to resume."
            ) from None
        finally:
            printer.finish()
        local = services.models.record_download(entry, result)
        _say(
            args,
            {
                "installed": str(local.path),
                "sha256": result.sha256,
                "checksum": local.checksum,
                "resumed_from": result.resumed_from,
            },
            f"Installed {entry.name} ({format_bytes(local.size)}, sha256 verified, {local.checksum}).\n"
            f"Switch to it with: memdesk models use {entry.id}",
        )
    return 0


def _use(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        kind, _, model = args.name.partition(":")
        note = ""
        if model and kind in {k for k, _label, _port in KNOWN_SERVERS}:
            choice, support = choose_on_server(kind, model)
            note = support.note
        else:
            choice = services.models.choose(args.name)
        switch_to(services, choice)
        _say(
            args,
            {"active": choice.label, "settings": choice.changes, "note": note},
            f"Active model: {choice.label}" + (f"\n{note}" if note else ""),
        )
    return 0


def switch_to(services: Services, choice: Choice) -> None:
    """Check and load the chosen model, and only then store the settings that select it."""
    settings = replace(services.settings, **choice.changes)
    services.models.preflight(settings)
    try:
        runtime = open_runtime(
            services, settings
        )  # llama.cpp refuses an architecture it cannot load here, in its child
        try:
            runtime.info  # noqa: B018 - the child has loaded the model, or raised why not
        finally:
            runtime.close()
    except ModelError as error:
        raise (
            explain_load_failure(error, services.models.active_path(settings))
            if settings.runtime == "llamacpp"
            else error
        ) from error
    snapshot_before(services, f"before switching to {choice.label}")
    for name, value in choice.changes.items():
        services.settings_store.set(name, value)


def _remove(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        removed = services.models.remove(args.name, services.settings)
        _say(args, {"removed": str(removed.path)}, f"Removed {removed.path}")
    return 0


def _servers(args: argparse.Namespace) -> int:
    servers = find_local_servers()
    if args.json:
        print(json.dumps({"servers": [s.as_dict() for s in servers]}, indent=2))
        return 0
    if not servers:
        print("No Ollama (port 11434) or LM Studio (port 1234) server answers on this machine.")
        return 0
    for server in servers:
        print(f"{server.label} at {server.base_url}: {', '.join(server.models) or 'no models'}")
        for model in server.models:
            print(f"  memdesk models use {server.kind}:{model}")
    return 0


def _say(args: argparse.Namespace, data: dict, text: str) -> None:
    print(json.dumps(data, indent=2) if args.json else text)


class _ProgressPrinter:
    """One self-rewriting status line on stderr (a plain line per phase when not a terminal)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tty = sys.stderr.isatty()
        self._phase = ""
        self._last = 0.0

    def __call__(self, progress: DownloadProgress) -> None:
        with self._lock:
            text = progress.describe()
            if self._tty:
                rewrite_line(text.ljust(78)[:78])
            elif (
                progress.phase != self._phase or progress.fraction - self._last >= 0.25 or progress.phase == "installed"
            ):
                sys.stderr.write(text + "\n")
                self._last = progress.fraction
            self._phase = progress.phase
            sys.stderr.flush()

    def finish(self) -> None:
        if self._tty:
            sys.stderr.write("\n")
            sys.stderr.flush()
