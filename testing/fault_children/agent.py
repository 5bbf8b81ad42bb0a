"""The agent_kill child: a real agent on the scripted runtime answering message after message, each
a real step (a memory write with a heartbeat, an archival insert, then the answer), printing
``committed N`` once a turn is saved. ``python -m testing.fault_children.agent FIRST_N``"""

from __future__ import annotations

import sys

from memdesk.app.agents import open_agent
from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.tools.context import AllowAll


def main(start: int) -> None:
    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    record = services.agents.find("sam") or services.create_agent("sam")
    runtime = ScriptedRuntime(context_window=1_000_000)
    agent = open_agent(services, record, runtime, consent=AllowAll())
    print("ready", flush=True)
    for n in range(start, start + 100_000):
        runtime.enqueue(
            call("core_memory_append", "save it", True, label="human", content=f"fact {n}"),
            call("archival_memory_insert", "keep it", True, content=f"note {n} " + "detail " * 40),
            say(f"reply {n}"),
        )
        agent.send_user_message(f"message {n}")
        print(f"committed {n}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
