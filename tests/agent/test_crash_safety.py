"""A process killed in the middle of a step loses that step only; earlier steps are intact."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder

CRASHING_TOOL = '''
import os


def crash_now(ctx, note: str) -> str:
    """Write to memory, then die before the step can commit.

    Args:
        note: Text written to core memory before the crash.
    """
    ctx.core.append(ctx.agent_id, "human", note)
    os._exit(9)


TOOLS = [crash_now]
'''

DRIVER = textwrap.dedent(
    """
    from memdesk.app.services import open_services
    from memdesk.app.agents import open_agent
    from memdesk.core.embedding.hashing import HashingEmbedder
    from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
    from memdesk.core.tools.context import AllowAll

    services = open_services(embedder=HashingEmbedder())
    record = services.create_agent("survivor")
    runtime = ScriptedRuntime([
        call("core_memory_append", "remember", True, label="human", content="Name: Ana"),
        say("Nice to meet you, Ana."),
        call("crash_now", "oh no", True, note="written by the crashing step"),
    ], context_window=16384)
    agent = open_agent(services, record, runtime, consent=AllowAll())
    agent.send_user_message("I am Ana")
    agent.send_user_message("this turn will crash")
    """
)


def test_a_crash_mid_step_keeps_every_earlier_step(memdesk_home):
    (memdesk_home / "tools").mkdir(parents=True)
    (memdesk_home / "tools" / "crasher.py").write_text(CRASHING_TOOL)
    completed = subprocess.run(
        [sys.executable, "-c", DRIVER], env=dict(os.environ), capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 9, completed.stderr

    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    try:
        record = services.agents.get_by_name("survivor")
        kinds = [m.kind for m in services.memory.recall.all(record.id)]
        # Turn one complete; turn two's user message saved before the model ran; the crashed step gone.
        assert kinds == [
            "user_message",
            "assistant_call",
            "function_result",
            "heartbeat",
            "assistant_call",
            "function_result",
            "user_message",
        ]
        human = services.memory.core.get(record.id, "human").value
        assert "Name: Ana" in human and "crashing step" not in human
        assert services.db.scalar("PRAGMA integrity_check") == "ok"
    finally:
        services.close()
