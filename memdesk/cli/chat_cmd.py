"""``memdesk chat [--agent NAME] [--verbose] [--private]``: chat with an agent in the terminal."""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any

from memdesk.app.agents import open_agent, open_consolidator
from memdesk.app.instance import TERMINAL_CHAT, InstanceLock
from memdesk.app.operations import open_retention
from memdesk.app.runtimes import make_runtime, runtime_factory
from memdesk.app.services import Services, daily_snapshots, memory_history, open_private_services

# The store's services, asking for the passphrase of an encrypted store (tests replace this name).
from memdesk.cli.passphrase import open_store_services as open_services
from memdesk.core.agent import unanswered
from memdesk.core.agent.accept import accept_user_message
from memdesk.core.agent.context import ContextBudget
from memdesk.core.agent.observer import AgentObserver, StepRecord, TurnResult
from memdesk.core.base.errors import GenerationCancelled
from memdesk.core.base.paths import Paths
from memdesk.core.runtime.base import CancelToken, StreamEvent
from memdesk.core.runtime.warmup import Warmup
from memdesk.core.tools.consent_text import ConsentText, one_line
from memdesk.session.idle_consolidation import IdleConsolidation
from memdesk.session.idle_retention import IdleRetention, IdleTasks

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


class TerminalObserver(AgentObserver):
    def __init__(self, verbose: bool, out=None) -> None:
        self.verbose = verbose
        self.out = out or sys.stdout
        self._streaming: str | None = None

    def on_stream(self, event: StreamEvent) -> None:
        if event.kind == "thought" and not self.verbose:
            return
        if self._streaming != event.kind:
            self._end_line()
            self.out.write("  (thinking) " if event.kind == "thought" else "agent> ")
            self._streaming = event.kind
        self.out.write(event.text)
        self.out.flush()

    def _end_line(self) -> None:
        if self._streaming is not None:
            self.out.write("\n")
            self._streaming = None

    def on_step(self, step: StepRecord) -> None:
        self._end_line()
        if self.verbose:
            arguments = {k: v for k, v in step.arguments.items() if k != "message" or step.function != "send_message"}
            status = "ok" if step.ok else "FAILED"
            self.out.write(f"  [{step.function}({arguments}) -> {status}: {step.result[:300]}]\n")

    def on_budget(self, budget: ContextBudget) -> None:
        if self.verbose:
            self.out.write(f"  [{budget.describe()}]\n")

    def on_event(self, kind: str, text: str) -> None:
        self._end_line()
        if self.verbose or kind in ("eviction", "step_cap"):
            self.out.write(f"  [{kind}: {text[:300]}]\n")

    def on_memory_changed(self, labels: set[str]) -> None:
        if self.verbose:
            self.out.write(f"  [core memory changed: {', '.join(sorted(labels))}]\n")

    def on_search_hits(self, hits: list[tuple[str, Any]]) -> None:
        pass

    def on_turn_end(self, result: TurnResult) -> None:
        self._end_line()
        if self.verbose:
            self.out.write(f"  [{result.kind}: {result.describe()}]\n")


def _pick_agent(services: Services, name: str | None):
    if name:
        return services.agents.find(name) or services.create_agent(name)
    existing = services.agents.list()
    return services.agents.find(DEFAULT_AGENT) or (existing[0] if existing else services.create_agent(DEFAULT_AGENT))


class BackgroundTurn:
    """A turn the user did not ask for (login), run in a thread while the prompt waits for input.
    A line typed meanwhile preempts it: ``preempt`` cancels the generation and waits for the
    thread, so the user's message never waits behind it for longer than one token. The line is
    saved before ``preempt`` is called: the wait can take seconds (a prompt batch, a tool)."""

    def __init__(self, run, observer: TerminalObserver) -> None:
        self._cancel = CancelToken()
        self._thread = threading.Thread(target=self._main, args=(run, observer), name="background-turn", daemon=True)
        self._thread.start()

    def _main(self, run, observer: TerminalObserver) -> None:
        try:
            _guarded(lambda: run(self._cancel), observer, quiet_cancel=True)
        except Exception as error:  # noqa: BLE001 - shown, never kills the prompt
            print(f"[background turn failed: {error}]", file=sys.stderr)

    def preempt(self) -> None:
        self._cancel.cancel()
        self._thread.join()


def run(args: argparse.Namespace) -> int:
    # One window or terminal chat per data folder: a second one fails now, naming the first.
    with InstanceLock(Paths.from_environment().instance_lock, TERMINAL_CHAT):
        return _chat(args)


def _chat(args: argparse.Namespace) -> int:
    with open_services() as services:
        idle = graph = private = None
        # The first session of a day snapshots the store meanwhile (stopped if the chat ends first).
        daily = daily_snapshots(
            services,
            on_error=lambda error: print(
                f"\n  [the daily snapshot failed: {getattr(error, 'user_message', error)}]", file=sys.stderr
            ),
        )
        daily.check()
        try:
            # Namespaces built by hand (tests, benchmarks) predate the flag.
            if getattr(args, "private", False):
                print("Starting a private chat (copying the store into memory)...", file=sys.stderr)
                private = open_private_services(services)
            chat_services = private or services
            record = _pick_agent(chat_services, args.agent)
            # Load the embedding model while llama.cpp loads, not at the agent's first archival call.
            preload = getattr(services.embedder, "load", None)
            if preload is not None:
                threading.Thread(target=preload, name="embedder-preload", daemon=True).start()
            print(f"Loading the model for {record.name}...", file=sys.stderr)
            runtime = runtime_factory(services.key, make_runtime)(services.settings)
            observer = TerminalObserver(args.verbose)
            agent = open_agent(chat_services, record, runtime, consent=TerminalConsent(), observer=observer)
            print(f"Chatting with {record.name} ({runtime.info.model_id}). {HELP}", file=sys.stderr)
            # A private chat runs no retention either: it is a writer the user did not ask for there.
            retention = [] if private is not None else [_idle_retention(services, record)]
            idle = IdleTasks(_idle_consolidation(chat_services, record, runtime, agent), *retention)
            try:
                if private is not None:
                    # No background writer runs (consolidation, graph extraction), and no login turn:
                    # the chat is the user's own, started to say something.
                    print(PRIVATE_BANNER, file=sys.stderr)
                    _loop(private, agent, observer, idle, login=False)
                else:
                    graph = _graph_extraction(services)
                    graph.nudge(record.id)  # catch up on what an earlier session left
                    _loop(
                        services,
                        agent,
                        observer,
                        idle,
                        login=not args.no_login,
                        after_turn=lambda: graph.nudge(record.id),
                    )
            finally:
                idle.close()
                runtime.close()
        finally:
            if idle is not None:
                idle.close()  # a pass must not outlive the store (Ctrl+C at the prompt)
            if graph is not None:
                graph.close()
            if private is not None:
                private.close()  # discards the private chat
            daily.close()
    return 0


def _idle_consolidation(services: Services, record, runtime, agent) -> IdleConsolidation:
    """Memory consolidation while the user is idle at the prompt (setting ``consolidation``), on
    the conversation's prompt so the pass reuses its KV cache."""

    def report(result) -> None:
        if result.applied or result.proposed:
            print(f"\n  [{result.describe()}; review with: memdesk consolidate list]", file=sys.stderr)

    # A private chat's consolidation would only reach the copy, but it is a writer the user did not ask for.
    minutes = 0 if services.private else services.settings.consolidation_idle_minutes
    return IdleConsolidation(
        lambda: open_consolidator(services, record, runtime, prefix=agent.prompt_prefix),
        minutes * 60,
        on_result=report,
        on_error=lambda error: print(
            f"\n  [consolidation failed: {getattr(error, 'user_message', error)}]", file=sys.stderr
        ),
    )


def _idle_retention(services: Services, record) -> IdleRetention:
    """Retention while idle (``memdesk retention``): a new policy is only announced here; it
    applies once confirmed with ``memdesk retention NAME --apply``."""
    retention = open_retention(services)
    due = retention.due(record.id)
    if due is not None and not retention.policy(record.id).confirmed:
        print(f"  [retention: {due.describe()} Confirm with: memdesk retention {record.name} --apply]", file=sys.stderr)
    return IdleRetention(
        lambda: retention.run_if_due(record.id),
        services.settings.consolidation_idle_minutes * 60,
        on_result=lambda removed: print(
            f"\n  [retention: forgot {removed} old conversation messages]", file=sys.stderr
        ),
        on_error=lambda error: print(
            f"\n  [retention failed: {getattr(error, 'user_message', error)}]", file=sys.stderr
        ),
    )


def _loop(
    services: Services,
    agent,
    observer: TerminalObserver,
    idle: IdleConsolidation | IdleTasks,
    *,
    login: bool,
    after_turn=lambda: None,
) -> None:
    """Read lines until /quit. Work the user did not ask for (the login turn, consolidation while
    idle) runs in the background and never makes a typed line wait: the line preempts it.

    A message an earlier session left without a reply (closed, killed, crashed, stopped) is shown
    and answered first, in the background too: a line typed meanwhile preempts it, and the turn
    that answers the line has both in its prompt. A private chat leaves it to the saved one."""
    owed = None if services.private else agent.unanswered()
    if owed is not None and unanswered.was_stopped(agent.memory.db, owed.id):
        # The user stopped its reply: shown, and left to /retry or the next line (which answers both).
        print(
            f"you (not answered: you stopped the reply, {owed.created_at:%Y-%m-%d %H:%M})> {owed.search_text}",
            file=sys.stderr,
        )
        print("[/retry answers it]", file=sys.stderr)
        owed = None
    if owed is not None:
        print(f"you (not answered yet, {owed.created_at:%Y-%m-%d %H:%M})> {owed.search_text}", file=sys.stderr)
        background = BackgroundTurn(lambda cancel: agent.answer_if_unanswered(owed.id, cancel), observer)
    else:
        background = BackgroundTurn(agent.login, observer) if login and agent.login_due() else None
    cancel = CancelToken()
    warmup = Warmup()  # the static prompt is evaluated while the user types (a login turn does it too)
    warmup.want(agent.runtime, agent.static_prefix(), agent.memory_prefix())
    while True:
        idle.touch()
        if background is None:
            warmup.resume()
        try:
            line = input("you> ")
        except (EOFError, KeyboardInterrupt):
            line = "/quit"
        text = line.strip()
        # Saved the moment it is accepted, before anything below is cancelled or waited for: a
        # crash while the background work lets go of the model must not lose the line. Only the
        # row is written here (as the window does): the memory check waits for the turn, so the
        # line is committed within one INSERT and the agent's state is not touched beside the
        # background turn's thread.
        accepted = accept_user_message(agent.memory, agent.id, text) if text and text not in COMMANDS else None
        idle.interrupt()  # the user is back: a running pass stops (and resumes next time)
        if background is not None:
            background.preempt()  # the user goes first
            background = None
        warmup.stop()  # gives way within one prompt batch
        if not text:
            continue
        if text in ("/quit", "/exit"):
            break
        if text == "/memory":
            print(services.memory.core.render(agent.id))
            continue
        if text == "/retry":
            _retry(agent, observer, cancel, private=services.private)
            continue
        if text == "/budget":
            print(agent.budget().describe())
            costs = agent.tool_costs()
            print(
                f"tools ({sum(costs.values())} tokens): "
                + ", ".join(f"{name} {tokens}" for name, tokens in costs.items())
            )
            continue
        assert accepted is not None
        cancel.reset()
        _guarded(
            lambda: agent.answer_user_message(accepted.id, cancel),
            observer,
            on_stopped=lambda: _record_stop(agent, accepted.id, services.private),
        )
        after_turn()  # the knowledge graph learns from the message in the background


def _retry(agent, observer: TerminalObserver, cancel: CancelToken, *, private: bool) -> None:
    """Answer the newest message still without a reply (after Ctrl+C stopped its turn)."""
    owed = agent.unanswered()
    if owed is None:
        print("[every message has its reply]", file=sys.stderr)
        return
    print(f"[answering: {one_line(owed.search_text)[:80]}]", file=sys.stderr)
    cancel.reset()
    # Answered again: a kill during this turn leaves it owed (answered on the next start), a
    # Ctrl+C marks it stopped again.
    unanswered.clear_stopped(agent.memory.db, owed.id)
    _guarded(
        lambda: agent.answer_if_unanswered(owed.id, cancel),
        observer,
        on_stopped=lambda: _record_stop(agent, owed.id, private),
    )


def _record_stop(agent, message_id: int, private: bool) -> None:
    """Ctrl+C stopped the reply to ``message_id``: recorded, so the next start shows it not answered
    with /retry instead of answering it on its own (a private chat's copy is discarded anyway)."""
    if not private and unanswered.is_unanswered(agent.memory.db, agent.id, message_id):
        unanswered.mark_stopped(agent.memory.db, message_id, agent.memory.clock.now())


def _graph_extraction(services: Services):
    """Knowledge-graph extraction after each message, on its own thread (setting ``graph_extraction``)."""
    from memdesk.core.graph.extraction import ExtractionOptions
    from memdesk.core.graph.nlp import SpacyAnalyser
    from memdesk.session.graph_extraction import BackgroundExtraction

    return BackgroundExtraction(
        services.paths.database,
        SpacyAnalyser,
        services.clock,
        lambda: ExtractionOptions(services.settings.graph_extraction),
        services.embedder,
        recorder=lambda db: memory_history(db, services.clock),  # the extractor's changes go in the history
        key=services.key,
        user_name=lambda: services.settings.user_name,
    )


def _guarded(action, observer: TerminalObserver, *, quiet_cancel: bool = False, on_stopped=lambda: None) -> None:
    """Ctrl+C stops the current generation, not the program."""
    try:
        result = action()
    except (KeyboardInterrupt, GenerationCancelled):
        observer._end_line()
        on_stopped()
        if not quiet_cancel:
            print("[stopped; /retry answers your message]", file=sys.stderr)
        return
    observer._end_line()
    if result is not None and result.steps and not result.replies and result.kind == "user_message":
        print("  (the agent did not reply this time)", file=sys.stderr)
