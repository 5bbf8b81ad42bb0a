"""kill -9 of the agent's process at random points of a real step (scripted runtime), 100 trials:
0 lost committed messages, PRAGMA integrity_check ok, the next start resumes."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from bench.faults.support import child, child_env, kill_after


def run(trials: int, rng: random.Random) -> dict:
    from memdesk.app.agents import open_agent
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import HOME_ENV, Paths
    from memdesk.core.embedding.hashing import HashingEmbedder
    from memdesk.core.runtime.scripted import ScriptedRuntime, say
    from memdesk.core.tools.context import AllowAll

    lost = bad_integrity = failed_resumes = committed_total = killed_in_turn = 0
    turn_seconds = 1.0  # one turn of the child, measured as it runs (the machine's load changes)
    with tempfile.TemporaryDirectory(prefix="memdesk-faults-") as folder:
        home = Path(folder) / "home"
        next_n = 0
        for _ in range(trials):
            process = subprocess.Popen(
                child("agent", str(next_n)),
                env=child_env(home),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            committed: list[int] = []
            first = process.stdout.readline()  # "ready": the store is open and the agent built
            if first.strip() == "ready":
                # Killed at a random point of its (turns_before + 1)-th turn: whatever the load,
                # every trial has committed messages at stake and dies inside a step.
                turns_before = rng.randint(0, 4)
                delay = rng.uniform(0.0, turn_seconds)
                if turns_before == 0:
                    threading.Thread(target=kill_after, args=(process, delay), daemon=True).start()
                last = time.perf_counter()
                for line in process.stdout:
                    if line.startswith("committed "):
                        committed.append(int(line.split()[1]))
                        now = time.perf_counter()
                        turn_seconds, last = 0.8 * turn_seconds + 0.2 * (now - last), now
                        if len(committed) == turns_before:
                            threading.Thread(target=kill_after, args=(process, delay), daemon=True).start()
            try:
                code = process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
            killed_in_turn += code == -signal.SIGKILL
            committed_total += len(committed)
            os.environ[HOME_ENV] = str(home)
            services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
            try:
                if services.db.scalar("PRAGMA integrity_check") != "ok":
                    bad_integrity += 1
                stored = {
                    m.content
                    for m in services.memory.recall.all(services.agents.get_by_name("sam").id)
                    if m.kind == "user_message"
                }
                lost += sum(1 for n in committed if not any(f'"message {n}"' in text for text in stored))
                # The next start resumes: the same agent answers a new message.
                runtime = ScriptedRuntime([say("back")], context_window=1_000_000)
                agent = open_agent(services, services.agents.get_by_name("sam"), runtime, consent=AllowAll())
                if not agent.send_user_message("are you there?").steps[-1].ok:
                    failed_resumes += 1
            except Exception:  # noqa: BLE001 - a store that cannot be reopened is a failed resume
                failed_resumes += 1
            finally:
                services.close()
            next_n += 100_000
    return {
        "trials": trials,
        "killed_by_the_campaign": killed_in_turn,
        "committed_messages": committed_total,
        "lost_committed_messages": lost,
        "integrity_failures": bad_integrity,
        "failed_resumes": failed_resumes,
        "ok": lost == 0 and bad_integrity == 0 and failed_resumes == 0 and killed_in_turn == trials,
    }
