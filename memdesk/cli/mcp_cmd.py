"""``memdesk mcp``: serve memory to other AI apps over MCP (stdio by default, ``--http`` for loopback
HTTP), and the terminal's side of it: the apps and what each may reach, a fresh token, writes
waiting for approval, the access log, the system keyring, a client's configuration
(mcp_config_cmd.py) and the MCP servers an agent may use (mcp_servers_cmd.py)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from memdesk.app.handover import key_from_running_app
from memdesk.app.keyring import drop_from_keyring, keep_in_keyring, key_from_keyring
from memdesk.cli import mcp_config_cmd, mcp_servers_cmd
from memdesk.cli.passphrase import current_passphrase, open_store_services
from memdesk.core.base.errors import MemDeskError
from memdesk.core.base.paths import Paths
from memdesk.core.connections.approvals import PENDING
from memdesk.core.connections.gate import Connections
from memdesk.core.storage.driver import file_is_encrypted


def add_command(commands) -> None:
    mcp = commands.add_parser(
        "mcp", help="serve memory to other AI apps over MCP (stdio; --http for loopback HTTP), and manage them"
    )
    add_serve_arguments(mcp)
    mcp.set_defaults(handler=serve)
    actions = mcp.add_subparsers(dest="action", metavar="ACTION")

    actions.add_parser("apps", help="list the connected apps and what each may reach").set_defaults(handler=_apps)
    grant = actions.add_parser("grant", help="let an app use an agent's memory (read-only unless --write)")
    grant.add_argument("app")
    grant.add_argument("agent")
    grant.add_argument("--write", action="store_true", help="let it change memory too (each write asks you first)")
    grant.add_argument("--trust", action="store_true", help="apply its writes without asking (still in history)")
    grant.set_defaults(handler=_grant)
    ungrant = actions.add_parser("ungrant", help="take one agent away from an app")
    ungrant.add_argument("app")
    ungrant.add_argument("agent")
    ungrant.set_defaults(handler=_ungrant)
    revoke = actions.add_parser("revoke", help="disconnect an app: it reaches nothing from now on")
    revoke.add_argument("app")
    revoke.set_defaults(handler=_revoke)
    token = actions.add_parser("token", help="a new HTTP token for an app (the old one stops working)")
    token.add_argument("app")
    token.set_defaults(handler=_token)

    approvals = actions.add_parser("approvals", help="writes from other apps waiting for you; apply or reject")
    approvals.add_argument("--apply", type=int, metavar="ID", help="apply write ID")
    approvals.add_argument("--reject", type=int, metavar="ID", help="reject write ID")
    approvals.add_argument("--content", help="with --apply: the text to write instead of the app's")
    approvals.add_argument("--all", action="store_true", help="list decided ones too")
    approvals.set_defaults(handler=_approvals)

    log = actions.add_parser("log", help="which app read or wrote what, and when")
    log.add_argument("--app", dest="log_app", help="only this app")
    log.add_argument("--limit", type=int, default=50)
    log.add_argument("--json", action="store_true", help="print JSON lines")
    log.set_defaults(handler=_log)

    keyring = actions.add_parser(
        "keyring", help="keep an encrypted store's passphrase in the system keyring for apps (or --remove it)"
    )
    keyring.add_argument("--remove", action="store_true")
    keyring.set_defaults(handler=_keyring)

    mcp_config_cmd.add_command(actions)
    mcp_servers_cmd.add_command(actions)


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--app", help="the app this server serves (default: the name the client declares)")
    parser.add_argument("--http", action="store_true", help="serve loopback Streamable HTTP on 127.0.0.1 instead")
    parser.add_argument("--port", type=int, help="the HTTP port (default: the mcp_http_port setting)")
    parser.add_argument(
        "--low-priority", action="store_true", help="run at a lower CPU priority (the window starts it so)"
    )
    parser.add_argument(
        "--end-with-parent",
        action="store_true",
        help="with --http: stop when standard input ends, i.e. when the app that started it ends",
    )


#: How much lower a server started with --low-priority runs (os.nice): the window's own work first.
LOW_PRIORITY = 10


def serve(args: argparse.Namespace) -> int:
    paths = Paths.from_environment().ensure()
    if getattr(args, "low_priority", False) and hasattr(os, "nice"):
        os.nice(LOW_PRIORITY)
    if args.http:
        from memdesk.mcp.http import LoopbackServer
        from memdesk.mcp.store import StoreThreads

        # Started by the running app, with no terminal: the app lends an encrypted store's passphrase.
        key = key_from_running_app(paths) or key_from_keyring(paths) if file_is_encrypted(paths.database) else None
        with open_store_services(paths, key=key) as services:
            port = args.port or services.settings.mcp_http_port
            key = services.key
        threads = StoreThreads(paths, embedder=None, key=key)
        threads.warm_embedder()  # a server that waits for clients: the first search should not load it
        server = LoopbackServer(threads, port)
        if getattr(args, "end_with_parent", False):
            server.stop_when_closed(sys.stdin.buffer)
        print(f"memdesk: serving MCP on {server.url} (Ctrl+C stops)", file=sys.stderr)
        try:
            server.run()
        finally:
            threads.close()
        return 0
    from memdesk.mcp.stdio import serve_stdio

    serve_stdio(paths, app_name=args.app)
    return 0


def _connections(services) -> Connections:
    settings_store = services.settings_store
    return Connections(services.memory, services.clock, keep_days=lambda: settings_store.load().mcp_log_days)


def _apps(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        apps = _connections(services).apps
        listed = apps.all()
        if not listed:
            print("No app is connected yet. Connect one with: memdesk mcp config CLIENT")
        for app in listed:
            state = "revoked" if app.revoked else ("trusted" if app.trusted else "asks before writing")
            grants = ", ".join(f"{g.agent} ({'read/write' if g.can_write else 'read'})" for g in apps.grants(app.id))
            seen = f"last seen {app.last_seen.astimezone():%Y-%m-%d %H:%M}" if app.last_seen else "never seen"
            token = ", has an HTTP token" if app.has_token else ""
            print(f"{app.name}\t{state}{token}\t{seen}\t{grants or 'no agent'}")
    return 0


def _grant(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        apps = _connections(services).apps
        app = apps.find(args.app) or apps.register(args.app)
        agent = services.agents.get_by_name(args.agent)
        apps.grant(app.id, agent.id, can_write=args.write or args.trust)
        apps.set_trusted(app.id, args.trust)
        access = "read and write" if args.write or args.trust else "read"
        writes = (
            " (its writes apply without asking)"
            if args.trust
            else (" (each write asks you first)" if args.write else "")
        )
        print(f"{app.name} may now {access} {agent.name}'s memory{writes}")
    return 0


def _ungrant(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        apps = _connections(services).apps
        app = apps.named(args.app)
        apps.ungrant(app.id, services.agents.get_by_name(args.agent).id)
        print(f"{app.name} no longer reaches {args.agent}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        connections = _connections(services)
        app = connections.apps.named(args.app)
        rejected = connections.revoke(app.id)
        dropped = f"; {rejected} write(s) it left waiting were rejected" if rejected else ""
        print(f"{app.name} is disconnected: it reaches no memory from now on{dropped}")
    return 0


def _token(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        apps = _connections(services).apps
        app = apps.find(args.app) or apps.register(args.app)
        token = apps.new_token(app.id)
        port = services.settings.mcp_http_port
        print(f"Token for {app.name} (shown once; give it to the app as a Bearer token):")
        print(token)
        print(f"URL: http://127.0.0.1:{port}/mcp")
        if not services.settings.mcp_http:
            print("Loopback HTTP is off: turn it on with memdesk settings set mcp_http true (the window serves it)")
    return 0


def _approvals(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        connections = _connections(services)
        if args.apply is not None:
            approval = connections.approvals.get(args.apply)
            edited = None
            if args.content is not None:
                key = "new_content" if approval.operation == "core_memory_replace" else "content"
                edited = {key: args.content}
            decided = connections.apply(args.apply, arguments=edited)
            print(f"Applied write {decided.id} from {decided.app} to {decided.agent}: {decided.outcome}")
            return 0
        if args.reject is not None:
            decided = connections.reject(args.reject)
            print(f"Rejected write {decided.id} from {decided.app}")
            return 0
        listed = connections.approvals.recent(limit=100) if args.all else connections.approvals.pending()
        if not listed:
            print("No write is waiting for your approval.")
        for approval in listed:
            state = "" if approval.status == PENDING else f" [{approval.status}]"
            when = f"{approval.created_at:%Y-%m-%d %H:%M}"
            print(f"{approval.id}{state}\t{when}\t{approval.app} -> {approval.agent}: {approval.operation}")
            print(f"    why: {approval.reason}")
            for name, value in approval.arguments.items():
                print(f"    {name}: {json.dumps(value, ensure_ascii=False)}")
        if any(a.status == PENDING for a in listed):
            print("Apply with: memdesk mcp approvals --apply ID (--content TEXT to change it); reject with --reject ID")
    return 0


def _log(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        entries = _connections(services).log.recent(limit=args.limit, app=args.log_app)
        if not entries and not args.json:
            print("No app has used memory over MCP yet.")
        for entry in entries:
            if args.json:
                row = {
                    "at": entry.at.isoformat(),
                    "app": entry.app,
                    "agent": entry.agent,
                    "operation": entry.operation,
                    "access": entry.access,
                    "summary": entry.summary,
                }
                print(json.dumps(row, ensure_ascii=False))
            else:
                fields = (entry.app, entry.agent or "-", entry.access, entry.operation, entry.summary)
                print(f"{entry.at:%Y-%m-%d %H:%M:%S}\t" + "\t".join(fields))
    return 0


def _keyring(args: argparse.Namespace) -> int:
    paths = Paths.from_environment().ensure()
    if args.remove:
        print("Removed from the system keyring." if drop_from_keyring(paths) else "It was not in the system keyring.")
        return 0
    if not file_is_encrypted(paths.database):
        raise MemDeskError("The store is not encrypted: apps open it without a passphrase")
    key = key_from_running_app(paths) or current_passphrase(paths.database)
    with open_store_services(paths, key=key):  # a wrong passphrase is refused before it is kept
        pass
    name = keep_in_keyring(paths, key)
    print(f"The passphrase is kept in the system keyring ({name}); apps can open the store while the window is closed.")
    print("Take it out again with: memdesk mcp keyring --remove")
    return 0
