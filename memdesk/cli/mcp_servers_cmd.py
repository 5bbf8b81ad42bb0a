"""``memdesk mcp servers AGENT``: the MCP servers whose tools an agent may use (each call still asks
first): list, add (a command or a URL), enable (connects once, shows the tools it offers and which
the agent cannot use, and why), disable, remove."""

from __future__ import annotations

import argparse
import shlex

from memdesk.cli.passphrase import open_store_services
from memdesk.core.tools.mcp_client.connection import fetch_tools
from memdesk.core.tools.mcp_client.servers import McpServers
from memdesk.core.tools.mcp_client.tools import Refused, spec_of


def add_command(actions) -> None:
    servers = actions.add_parser("servers", help="MCP servers whose tools an agent may use (asks before each call)")
    servers.add_argument("agent")
    servers.add_argument("--add", metavar="NAME", help="add a server (disabled until --enable)")
    servers.add_argument("--command", dest="server_command", help="with --add: the command that starts it (stdio)")
    servers.add_argument("--url", help="with --add: its Streamable HTTP URL")
    servers.add_argument("--enable", metavar="NAME", help="connect, show its tools, and let the agent use them")
    servers.add_argument("--disable", metavar="NAME")
    servers.add_argument("--remove", metavar="NAME")
    servers.add_argument("--yes", action="store_true", help="with --enable: do not ask")
    servers.set_defaults(handler=_servers)


def _servers(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        agent = services.agents.get_by_name(args.agent)
        store = McpServers(services.db, services.clock)
        if args.add:
            command = shlex.split(args.server_command) if args.server_command else None
            server = store.add(agent.id, args.add, command=command, url=args.url or "")
            print(f"Added {server.name} ({server.where()}), disabled: enable it with --enable {server.name}")
            return 0
        if args.enable:
            server = store.get(agent.id, args.enable)
            print(f"Connecting to {server.name} ({server.where()})…")
            offered = fetch_tools(server, seconds=services.settings.mcp_call_timeout_s)
            kept = []
            for tool in offered:
                spec = spec_of(server, tool)
                if isinstance(spec, Refused):
                    print(f"  cannot use {spec.tool}: {spec.reason}")
                else:
                    kept.append(spec.name)
                    print(f"  {spec.name}: {spec.description}")
            if not kept:
                print(f"{server.name} offers no tool {agent.name} can use; left disabled.")
                return 1
            if not args.yes:
                question = f"Let {agent.name} use these {len(kept)} tool(s)? Each call still asks you first. [y/N] "
                if input(question).strip().lower() not in ("y", "yes"):
                    print("Left disabled.")
                    return 1
            store.enable(agent.id, server.name, offered)
            print(f"Enabled {server.name} for {agent.name}")
            return 0
        if args.disable:
            store.disable(agent.id, args.disable)
            print(f"Disabled {args.disable}")
            return 0
        if args.remove:
            store.remove(agent.id, args.remove)
            print(f"Removed {args.remove}")
            return 0
        listed = store.all(agent.id)
        if not listed:
            print(f"{agent.name} uses no MCP server. Add one with --add NAME --command '...' or --url URL")
        for server in listed:
            state = f"enabled, {len(server.tools)} tool(s)" if server.enabled else "disabled"
            print(f"{server.name}\t{state}\t{server.transport}\t{server.where()}\t(from {server.origin})")
    return 0
