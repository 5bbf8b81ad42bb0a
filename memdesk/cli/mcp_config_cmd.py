"""``memdesk mcp config CLIENT``: the configuration that connects an AI app to MemDesk, printed,
or written into the app's configuration file after showing the change (``--write``)."""

from __future__ import annotations

import argparse
import json

from memdesk.cli.passphrase import open_store_services
from memdesk.core.connections.gate import Connections
from memdesk.mcp.client_configs import (
    CLIENTS,
    apply_change,
    client,
    config_file,
    http_url,
    lmstudio_deeplink,
    plan_change,
    snippet,
)


def add_command(actions) -> None:
    config = actions.add_parser("config", help="connect an AI app: print its configuration, or --write it")
    config.add_argument("client", choices=sorted(CLIENTS), help="the app to connect")
    config.add_argument("--agent", help="give the app this agent's memory (read-only unless --write-access)")
    config.add_argument("--write-access", action="store_true", help="with --agent: let it change memory (asks you)")
    config.add_argument("--write", action="store_true", help="add MemDesk to the app's configuration file")
    config.add_argument("--yes", action="store_true", help="with --write: do not ask before changing the file")
    config.set_defaults(handler=_config)


def _config(args: argparse.Namespace) -> int:
    target = client(args.client)
    with open_store_services() as services:
        settings_store = services.settings_store
        connections = Connections(services.memory, services.clock, keep_days=lambda: settings_store.load().mcp_log_days)
        app = connections.apps.find(target.name) or connections.apps.register(target.name)
        if args.agent:
            agent = services.agents.get_by_name(args.agent)
            connections.apps.grant(app.id, agent.id, can_write=args.write_access)
            print(f"{app.name} may {'read and write' if args.write_access else 'read'} {agent.name}'s memory.")
        elif not connections.apps.grants(app.id):
            print(f"{app.name} sees no agent yet: give it one with memdesk mcp grant {app.name!r} AGENT")
        port = services.settings.mcp_http_port
        http_on = services.settings.mcp_http
    if not target.servers_key:  # Open WebUI: loopback HTTP
        print(f"In {target.name}: {target.how}")
        print(f"URL: {http_url(port)}")
        print(f"Authentication: Bearer, with the token from: memdesk mcp token {app.name!r}")
        if not http_on:
            print("Turn loopback HTTP on first: memdesk settings set mcp_http true (MemDesk's window serves it)")
        return 0
    print(f"# {target.name}: {target.how}")
    print(json.dumps(snippet(target, port=port), indent=2))
    if target.key == "lmstudio":
        print(f"# or open: {lmstudio_deeplink()}")
    if not args.write:
        return 0
    path = config_file(target)
    if path is None:
        print(f"{target.name}'s configuration file was not found on this computer; paste the snippet above in it.")
        return 1
    change = plan_change(target, path)
    if not change.changes_anything:
        print(f"{path} already connects {target.name} to MemDesk.")
        return 0
    print(change.diff)
    if not args.yes:
        answer = input(f"Change {path} as shown? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("Left as it was.")
            return 1
    backup = apply_change(change)
    kept = f" (the old one is kept as {backup})" if backup else ""
    print(f"Wrote {path}{kept}. Restart {target.name} to connect it.")
    return 0
