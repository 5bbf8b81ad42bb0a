"""The sent_line_kill child: the real terminal loop (memdesk.cli.chat_cmd._loop) with one kind of
background work running when a line arrives on stdin. The work holds the model (or the analyser)
for HOLD seconds that nothing can cut short, as a prompt batch or a tool does; the loop cancels
and waits for it after the line. It prints ``@busy`` when the work starts holding and ``@read``
when the prompt returns the line (accepted from then on).
``python -m testing.fault_children.sent_line KIND HOLD`` (KIND: login, heartbeat, consolidation, graph)"""

from __future__ import annotations

import sys
import time

from memdesk.app.agents import open_agent, open_consolidator
from memdesk.app.services import memory_history, open_services
from memdesk.cli import chat_cmd
from memdesk.core.agent.consolidation.prompt import FINISH
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.graph.extraction import ExtractionOptions
from memdesk.core.graph.nlp import Analysis
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.tools.context import AllowAll
from memdesk.session.graph_extraction import BackgroundExtraction
from memdesk.session.idle_consolidation import IdleConsolidation


def main(kind: str, hold: float) -> None:
    def busy() -> None:
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

    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    services.settings_store.set("consolidation_every_turns", 1)
    record = services.create_agent("sam")
    runtime = ScriptedRuntime(context_window=1_000_000)
    observer = chat_cmd.TerminalObserver(False)
    agent = open_agent(services, record, runtime, consent=AllowAll(), observer=observer)
    if kind in ("consolidation", "graph"):  # something to consolidate or extract from
        runtime.enqueue(say("Noted."))
        agent.send_user_message(
            "My sister Ann moved to Lisbon last spring and she works as a nurse at the city hospital now."
        )
    if kind == "heartbeat":
        agent.login = agent.timed_heartbeat  # the terminal has no timer: the prompt's background turn is one
    background = {
        "login": say("Welcome back!"),
        "heartbeat": say("Still here."),
        "consolidation": call(FINISH, "nothing new"),
    }
    if kind in background:
        runtime.enqueue(held(background[kind]))
    runtime.enqueue(say("Got it."), *[call(FINISH, "done")] * 4)
    idle = IdleConsolidation(
        lambda: open_consolidator(services, record, runtime, prefix=agent.prompt_prefix),
        0.05 if kind == "consolidation" else 0,
    )
    graph = None
    if kind == "graph":
        graph = BackgroundExtraction(
            services.paths.database,
            SlowAnalyser,
            services.clock,
            lambda: ExtractionOptions(True),
            services.embedder,
            recorder=lambda db: memory_history(db, services.clock),
        )
        graph.nudge(record.id)
    chat_cmd.input = read_line
    chat_cmd._loop(
        services,
        agent,
        observer,
        idle,
        login=kind in ("login", "heartbeat"),
        after_turn=(lambda: graph.nudge(record.id)) if graph else (lambda: None),
    )


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
