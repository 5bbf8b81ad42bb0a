"""The model child killed while idle and while generating, 20 each: the next message works (real
llama.cpp with the bundled model)."""

from __future__ import annotations

import os
import random
import signal
import tempfile
import threading
import time
from pathlib import Path

from bench.faults.support import progress


def run(trials: int, rng: random.Random | None = None) -> dict:
    from memdesk.app.agents import open_agent
    from memdesk.app.runtimes import make_runtime
    from memdesk.app.services import open_services
    from memdesk.core.agent.observer import AgentObserver
    from memdesk.core.base.paths import HOME_ENV, Paths
    from memdesk.core.base.settings_table import Settings
    from memdesk.core.embedding.hashing import HashingEmbedder
    from memdesk.core.tools.context import AllowAll

    class Streaming(AgentObserver):
        def __init__(self) -> None:
            self.started = threading.Event()

        def on_stream(self, event) -> None:
            self.started.set()

    rng = rng or random.Random(0)
    results = {"idle": 0, "generating": 0}
    moments = {"while_streaming": 0, "before_first_token": 0, "call_already_over": 0}
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="memdesk-faults-") as folder:
        os.environ[HOME_ENV] = str(Path(folder) / "home")
        services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
        try:
            settings = Settings(max_chained_steps=1, max_answer_tokens=48, context_size=2048)
            for kind in ("idle", "generating"):
                # A runtime of its own for each kind, so one kind's failure does not count twice; the
                # app's own (its child process, and the disk KV cache a restarted child reads).
                runtime = make_runtime(settings)
                try:
                    record = services.create_agent(f"sam-{kind}")
                    observer = Streaming()
                    agent = open_agent(
                        services, record, runtime, consent=AllowAll(), settings=settings, observer=observer
                    )
                    for trial in range(trials):
                        progress(f"model_kill: {kind} trial {trial + 1} of {trials}")
                        if kind == "idle":
                            _kill_idle(runtime)
                        else:
                            # Half the kills land once tokens stream, half at a random moment of
                            # the call (mostly prompt evaluation).
                            moments[
                                _kill_mid_call(agent, runtime, observer.started, streaming=trial % 2 == 0, rng=rng)
                            ] += 1
                        try:
                            result = agent.send_user_message("Hello again!")
                            results[kind] += bool(result.steps)
                        except Exception as error:  # noqa: BLE001 - counted, with the reason
                            if len(errors) < 4:
                                errors.append(f"{kind}: {type(error).__name__}: {str(error)[:160]}")
                finally:
                    runtime.close()
        finally:
            services.close()
    return {
        "trials_each": trials,
        "next_message_worked_after_idle_kill": results["idle"],
        "next_message_worked_after_kill_while_generating": results["generating"],
        "generating_kills": moments,
        "errors": errors,
        "ok": results["idle"] == trials and results["generating"] == trials and moments["call_already_over"] == 0,
    }


def _kill_idle(runtime) -> None:
    runtime.wait_ready()  # "idle" means loaded and waiting; the constructor returns while it loads
    if runtime.pid is not None:
        os.kill(runtime.pid, signal.SIGKILL)
        time.sleep(0.2)


def _kill_mid_call(agent, runtime, streaming_started: threading.Event, *, streaming: bool, rng: random.Random) -> str:
    """Kill the child during a call; say when: while_streaming, before_first_token or (a miss)
    call_already_over."""
    pid = runtime.pid
    done = threading.Event()
    streaming_started.clear()

    def doomed() -> None:
        try:
            agent.send_user_message("Tell me a long story about the sea.")
        except Exception:  # noqa: BLE001 - this turn is expected to fail
            pass
        done.set()

    threading.Thread(target=doomed, daemon=True).start()
    if streaming:
        # Tokens stream, or the turn ends without streaming (a miss, counted): whichever comes first.
        give_up = time.monotonic() + 300
        while not streaming_started.wait(0.05) and not done.is_set() and time.monotonic() < give_up:
            pass
    else:
        done.wait(rng.uniform(0.2, 1.5))
    moment = (
        "call_already_over"
        if done.is_set()
        else "while_streaming"
        if streaming_started.is_set()
        else "before_first_token"
    )
    pid = runtime.pid or pid  # the child the call runs in (a restart gave it a new one)
    if pid is not None and not done.is_set():
        os.kill(pid, signal.SIGKILL)
    done.wait(300)
    return moment
