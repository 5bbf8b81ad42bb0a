"""The sent_line_kill child: the real terminal chat (memdesk.cli.chat_cmd's line loop over a
session) with one kind of background work running when a line arrives on stdin. The work holds the
model (or the analyser) for HOLD seconds that nothing can cut short, as a prompt batch or a tool
does; the session cancels and waits for it after the line. It prints ``@busy`` when the work starts
holding and ``@read`` when the prompt returns the line (accepted from then on).
``python -m testing.fault_children.sent_line KIND HOLD`` (KIND: login, heartbeat, consolidation, graph)"""

from __future__ import annotations

import sys
import time

from memdesk.app.agents import open_agent
from memdesk.app.services import open_services
from memdesk.app.sessions import build_session
from memdesk.cli import chat_cmd
from memdesk.cli.terminal_listener import TerminalListener
from memdesk.core.base.paths import Paths
from memdesk.core.consolidation.prompt import FINISH
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.graph.nlp import Analysis
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.tools.context import AllowAll
from memdesk.session.idle import IdleIntervals


def main(kind: str, hold: float) -> None:
    held_once: list[bool] = []

    def busy() -> None:
        held_once.append(True)
        print("\n@busy", flush=True)
        time.sleep(hold)

    def held(answer):
        def answer_after_the_hold(_messages):
            busy()
            return answer

        return answer_after_the_hold

    class SlowAnalyser:
        def analyse(self, texts):
            busy()
            return [Analysis() for _ in texts]

    def read_line(prompt=""):
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        print("\n@read", flush=True)  # the prompt returns the line: it is accepted from here on
        return line

    def intervals(_settings) -> IdleIntervals:
        # One timed heartbeat or pass soon after the start (the one that holds the model), no more.
        soon = 0.0 if held_once else 0.05
        return IdleIntervals(
            heartbeat=soon if kind == "heartbeat" else 0.0, consolidation=soon if kind == "consolidation" else 0.0
        )

    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    services.settings_store.set("consolidation_every_turns", 1)
    services.settings_store.set("login_after_minutes", 60 if kind == "login" else 0)
    services.settings_store.set("graph_model_facts", False)  # the script's answers are the turns'
    record = services.create_agent("sam")
    runtime = ScriptedRuntime(context_window=1_000_000)
    if kind in ("consolidation", "graph"):  # something to consolidate or extract from
        runtime.enqueue(say("Noted."))
        open_agent(services, record, runtime, consent=AllowAll()).send_user_message(
            "My sister Ann moved to Lisbon last spring and she works as a nurse at the city hospital now."
        )
    background = {
        "login": say("Welcome back!"),
        "heartbeat": say("Still here."),
        "consolidation": call(FINISH, "nothing new"),
    }
    if kind in background:
        runtime.enqueue(held(background[kind]))
    runtime.enqueue(say("Got it."), *[call(FINISH, "done")] * 4)
    listener = TerminalListener(False, record.name)
    session = build_session(
        services,
        listener,
        make_runtime=lambda _settings: runtime,
        consent=AllowAll(),
        analyser=SlowAnalyser if kind == "graph" else None,
        idle_intervals=intervals if kind in ("heartbeat", "consolidation") else (lambda _settings: IdleIntervals()),
        warm_embedder=False,
    )
    session.start()
    chat_cmd.input = read_line
    try:
        chat_cmd.chat_loop(session, listener, services, record, private=False)
    finally:
        session.close()


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
