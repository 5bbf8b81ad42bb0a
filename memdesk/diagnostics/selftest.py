"""``--self-test``: does this install really work? The packaged bundle's smoke test.

In a temporary home (the user's data is never touched) it opens the store, loads the embedding
model and the default chat model, and runs one real agent turn; one line per stage, exit 0 when
every stage worked. Unlike ``memdesk doctor`` (which explains a machine), this proves that an
install carries everything it needs: data files, hidden imports, native libraries, both models.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from typing import TextIO

from memdesk.core.base.errors import MemDeskError
from memdesk.core.base.paths import HOME_ENV, Paths

MESSAGE = "Hello! My name is Ada and I love hiking."
#: A smoke test, not a conversation: the small default model tends to repeat a memory edit until
#: the step cap, so the turn is capped at 2 steps (on a busy 2-core machine 10 steps took minutes).
MAX_STEPS = 2


def run(out: TextIO = sys.stdout) -> int:
    started = time.perf_counter()

    def say(stage: str, detail: str) -> None:
        print(f"self-test: {stage:<8} {detail} ({time.perf_counter() - started:.1f} s)", file=out, flush=True)

    previous = os.environ.get(HOME_ENV)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        with tempfile.TemporaryDirectory(prefix="memdesk-selftest-") as home:
            os.environ[HOME_ENV] = home
            return _stages(say)
    except MemDeskError as error:
        say("FAILED", error.user_message)
        return 1
    finally:
        if previous is None:
            os.environ.pop(HOME_ENV, None)
        else:
            os.environ[HOME_ENV] = previous


def _stages(say) -> int:
    from memdesk.app.agents import open_agent
    from memdesk.app.runtimes import make_runtime
    from memdesk.app.services import open_services
    from memdesk.core.tools.context import DenyAll

    services = open_services(Paths.from_environment())
    try:
        say(
            "store",
            f"{services.paths.database.name}, schema {services.db.schema_version},"
            f" sqlite-vec {services.db.scalar('SELECT vec_version()')}",
        )
        vectors = services.embedder.embed([MESSAGE])
        say("embedder", f"{services.embedder.model_id}, {vectors.shape[1]} dimensions")
        settings = replace(services.settings, context_size=4096, max_chained_steps=MAX_STEPS)
        runtime = make_runtime(settings)
        try:
            say("model", f"{runtime.info.model_id}, context {runtime.info.context_window}")
            record = services.create_agent("Self-test")
            agent = open_agent(services, record, runtime, consent=DenyAll(), settings=settings)
            result = agent.send_user_message(MESSAGE)
        finally:
            runtime.close()
        calls = [step.function for step in result.steps]
        valid = all(_is_call(step.raw) for step in result.steps)
        saved = any(
            MESSAGE in str(row)
            for row in services.db.query("SELECT content FROM messages WHERE agent_id = ?", (record.id,))
        )
        say(
            "turn",
            f"{len(calls)} step(s): {', '.join(calls) or 'none'}; every call valid JSON: {valid}; message saved:"
            f" {saved}",
        )
        if not calls or not valid or not saved:
            say("FAILED", "the agent turn did not produce valid, saved calls")
            return 1
    finally:
        services.close()
    say("passed", "store, embedder, model and one agent turn all work")
    return 0


def _is_call(text: str) -> bool:
    try:
        call = json.loads(text)
    except ValueError:
        return False
    return isinstance(call, dict) and isinstance(call.get("function"), str) and isinstance(call.get("params"), dict)
