"""``memdesk chat [--agent NAME] [--verbose] [--private]``: chat with an agent in the terminal.

A line loop over the session layer (memdesk.session), as the window is: a typed line is saved the
moment Enter is pressed and answered on the session's job thread, which the loop waits for (Ctrl+C
stops the reply: the message waits for /retry). Work nobody asked for (an owed reply, the login
turn, timed heartbeats, consolidation, retention, graph extraction) runs in the background while
the prompt waits, and a typed line preempts it.
"""

from __future__ import annotations

import argparse
import sys
import threading

from memdesk.app.instance import TERMINAL_CHAT, InstanceLock
from memdesk.app.runtimes import make_runtime, runtime_factory
from memdesk.app.services import Services, daily_snapshots
from memdesk.app.sessions import build_session, default_analyser

# The store's services, asking for the passphrase of an encrypted store (tests replace this name).
from memdesk.cli.passphrase import open_store_services as open_services
from memdesk.cli.terminal_listener import TerminalListener
from memdesk.core.base.errors import AgentNotFoundError, MemDeskError
from memdesk.core.base.paths import Paths
from memdesk.core.tools.consent_text import ConsentText, one_line
from memdesk.mcp.serving import Serving
from memdesk.session.session import Session, Turn

DEFAULT_AGENT = "companion"
HELP = "Type a message and press Enter. Commands: /memory, /budget, /retry, /quit."
COMMANDS = ("/memory", "/budget", "/retry", "/quit", "/exit")
PRIVATE_BANNER = (
    "Private chat: nothing of it is saved (messages, memory edits, the knowledge graph, the model's cache);"
    " the agent reads its memories, and everything is discarded when you quit."
)


def add_command(commands) -> None:
    parser = commands.add_parser("chat", help="chat with an agent in the terminal")
    parser.add_argument("--agent", help=f"agent name (default: the last one used, or {DEFAULT_AGENT!r})")
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="also show inner monologue, function calls and the budget"
    )
    parser.add_argument("--no-login", action="store_true", help="do not send the login event at start")
    parser.add_argument(
        "--private", action="store_true", help="a private chat: the agent reads its memories, nothing is saved"
    )
    parser.set_defaults(handler=run)


class TerminalConsent:
    """Asks at the terminal before a tool touches files or the network."""

    def __init__(self) -> None:
        self._always: set[tuple[int, str]] = set()

    def allow(self, agent_id: int, tool: str, summary: str) -> bool:
        if (agent_id, tool) in self._always:
            return True
        if not sys.stdin.isatty():
            return False
        question = ConsentText.parse(summary)
        print(f"\nThe agent wants to {question.action} ({one_line(tool)}).")
        if question.data:
            print(question.preview)
        choices = "[y]es once / [a]lways / [N]o" + (" / [s]how all" if question.is_shortened else "")
        answer = input(f"Allow? {choices}: ").strip().lower()
        while answer in ("s", "show all") and question.is_shortened:
            print(question.data)
            answer = input(f"Allow? {choices}: ").strip().lower()
        if answer in ("a", "always"):
            self._always.add((agent_id, tool))
            return True
        return answer in ("y", "yes")


#: The knowledge graph's NLP (tests replace this name).
graph_analyser = default_analyser


def _pick_agent(services: Services, name: str | None, *, private: bool):
    """The agent to chat with; created if missing, except for a private chat, which saves nothing."""
    found = services.agents.find(name) if name else services.agents.find(DEFAULT_AGENT)
    if found is None and not name:
        existing = services.agents.list()
        found = existing[0] if existing else None
    if found is None and private:
        raise AgentNotFoundError(
            f"No agent named {name or DEFAULT_AGENT!r} to chat with privately", hint="chat with it once first"
        )
    return found or services.create_agent(name or DEFAULT_AGENT)


def run(args: argparse.Namespace) -> int:
    # One window or terminal chat per data folder: a second one fails now, naming the first.
    with InstanceLock(Paths.from_environment().instance_lock, TERMINAL_CHAT):
        return _chat(args)


def _chat(args: argparse.Namespace) -> int:
    # Namespaces built by hand (tests, benchmarks) predate the flag.
    private = getattr(args, "private", False)
    with open_services() as services:
        # The first session of a day snapshots the store meanwhile (stopped if the chat ends first).
        daily = daily_snapshots(
            services,
            on_error=lambda error: print(
                f"\n  [the daily snapshot failed: {getattr(error, 'user_message', error)}]", file=sys.stderr
            ),
        )
        daily.check()
        # While the chat runs it serves other apps as the window does: an encrypted store's
        # passphrase on the private socket, and MCP over loopback HTTP if mcp_http is on.
        serving = Serving(services.paths, services.key)
        try:
            serving.follow(services.settings)
        except MemDeskError as error:
            print(f"memdesk: {error.user_message}", file=sys.stderr)
        session: Session | None = None
        try:
            record = _pick_agent(services, args.agent, private=private)
            # Load the embedding model while llama.cpp loads, not at the agent's first archival call.
            preload = getattr(services.embedder, "load", None)
            if preload is not None:
                threading.Thread(target=preload, name="embedder-preload", daemon=True).start()
            listener = TerminalListener(args.verbose, record.name)
            session = build_session(
                services,
                listener,
                make_runtime=runtime_factory(services.key, make_runtime),
                consent=TerminalConsent(),
                # A private chat runs no graph extraction: a writer the user did not ask for there.
                analyser=None if private else graph_analyser,
                login=not args.no_login,
                warm_embedder=False,
            )
            session.start()
            chat_loop(session, listener, services, record, private=private)
        finally:
            if session is not None:
                session.close()  # nothing of it outlives the store (Ctrl+C at the prompt)
            daily.close()
            serving.close()
    return 0


def chat_loop(session: Session, listener: TerminalListener, services: Services, record, *, private: bool) -> None:
    """Open the agent (or a private chat with it) on ``session``, then read lines until /quit."""
    print(f"Loading the model for {record.name}...", file=sys.stderr)
    owed = None if private else session.owed_reply(record.id)
    session.load_model(services.settings)
    if private:
        print("Starting a private chat (copying the store into memory)...", file=sys.stderr)
        session.start_private(record.id)
    else:
        session.open_agent(record.id)
    listener.wait_until_open()
    print(f"Chatting with {record.name} ({listener.model_id}). {HELP}", file=sys.stderr)
    if private:
        # Nothing that writes on its own runs (login, consolidation, retention, graph extraction):
        # the chat is the user's own, started to say something.
        print(PRIVATE_BANNER, file=sys.stderr)
    else:
        session.graph_catch_up(record.id)  # what an earlier session left
        waits = session.announce_retention(record.id)  # only announced here: it applies once confirmed
        if waits is not None:
            print(f"  [{listener.retention_text(waits)}]", file=sys.stderr)
    if owed is not None:
        # A message an earlier session left without a reply: answered in the background (a line
        # typed meanwhile preempts it, and its turn has both), unless the user stopped its reply.
        when, text = f"{owed.message.created_at:%Y-%m-%d %H:%M}", owed.message.search_text
        if owed.waits_for_retry:
            print(f"you (not answered: you stopped the reply, {when})> {text}", file=sys.stderr)
            print("[/retry answers it]", file=sys.stderr)
        else:
            print(f"you (not answered yet, {when})> {text}", file=sys.stderr)
    _read_lines(session, listener)


def _read_lines(session: Session, listener: TerminalListener) -> None:
    while True:
        try:
            line = input("you> ")
        except (EOFError, KeyboardInterrupt):
            line = "/quit"
        text = line.strip()
        if not text:
            continue
        if text in ("/quit", "/exit"):
            break
        if text == "/memory":
            print(session.query(lambda agent: agent.memory.core.render(agent.id)))
        elif text == "/budget":
            print(session.query(_budget_text))
        elif text == "/retry":
            outcome = session.retry()
            if isinstance(outcome, str):
                print(f"[{outcome}]", file=sys.stderr)
            else:
                print(f"[answering: {one_line(outcome.message.search_text)[:80]}]", file=sys.stderr)
                _wait(session, listener, outcome)
        else:
            # Saved the moment it is accepted, before anything is cancelled or waited for.
            _wait(session, listener, session.send(text))


def _wait(session: Session, listener: TerminalListener, turn: Turn) -> None:
    """Wait for ``turn``'s reply; Ctrl+C stops it (the message then waits for /retry)."""
    while True:
        try:
            if turn.done.wait(0.1):
                break
        except KeyboardInterrupt:
            session.stop_by_user()
    listener.end_line()


def _budget_text(agent) -> str:
    costs = agent.tool_costs()
    tools = ", ".join(f"{name} {tokens}" for name, tokens in costs.items())
    return f"{agent.budget().describe()}\ntools ({sum(costs.values())} tokens): {tools}"
