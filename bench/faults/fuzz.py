"""10,000 malformed function calls through the agent, raw text as with the grammar off: 0
crashes, each answered as a failed call."""

from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path

KNOWN = [
    "send_message",
    "core_memory_append",
    "core_memory_replace",
    "archival_memory_insert",
    "archival_memory_search",
    "conversation_search",
    "conversation_search_date",
    "pause_heartbeats",
]


def _junk(rng: random.Random, size: int = 40) -> str:
    return "".join(
        chr(rng.choice([0, 9, 10, 34, 92, rng.randint(32, 126), rng.randint(0x80, 0x2FFF)])) for _ in range(size)
    )


def fuzz_call(rng: random.Random) -> str:
    """Text a broken model could emit, none of it a valid call."""
    kind = rng.randrange(9)
    huge = "x" * rng.choice([10_000, 10_000, 10_000, 100_000])
    if kind == 0:
        return _junk(rng, rng.randint(0, 200))
    if kind == 1:
        return json.dumps(rng.choice([[1, 2], 3, "send_message", None, True, {"params": {}}]))
    if kind == 2:
        return json.dumps({"function": _junk(rng, 12) + "\x00", "params": {"message": "hi"}})
    if kind == 3:
        return json.dumps({"function": huge, "params": {}})
    if kind == 4:  # a known function with arguments of the wrong type
        return json.dumps(
            {
                "function": rng.choice(KNOWN[1:]),
                "params": {
                    "label": rng.choice([1, [], {}, None]),
                    "content": {"a": 1},
                    "query": [1],
                    "old_content": 5,
                    "new_content": False,
                    "start_date": 20260101,
                    "end_date": None,
                    "minutes": "soon",
                },
            }
        )
    if kind == 5:  # a known function with a required argument missing
        return json.dumps(
            {
                "function": rng.choice(
                    ["core_memory_append", "core_memory_replace", "archival_memory_insert", "conversation_search"]
                ),
                "params": {"inner_thoughts": _junk(rng)},
            }
        )
    if kind == 6:  # unknown arguments, huge and with NUL bytes
        return json.dumps(
            {"function": rng.choice(KNOWN), "params": {"\x00" + _junk(rng, 5): huge, "message": "\x00" * 3}}
        )
    if kind == 7:
        return '{"function": "send_message", "params": {"message": "cut off'  # truncated JSON
    return json.dumps({"function": "send_message", "params": "not an object"})


def run(calls: int, rng: random.Random) -> dict:
    from memdesk.app.agents import open_agent
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import HOME_ENV, Paths
    from memdesk.core.embedding.hashing import HashingEmbedder
    from memdesk.core.runtime.scripted import ScriptedRuntime
    from memdesk.core.tools.context import AllowAll

    crashes = answered_ok = steps_seen = 0
    examples: list[str] = []
    with tempfile.TemporaryDirectory(prefix="memdesk-faults-") as folder:
        os.environ[HOME_ENV] = str(Path(folder) / "home")
        services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
        try:
            sent = 0
            agent_number = 0
            while sent < calls:
                # A fresh agent every few turns keeps the prompt small: huge failed calls stay in
                # context, and counting them again each step is what would cost the time.
                record = services.create_agent(f"fuzz-{agent_number}")
                agent_number += 1
                runtime = ScriptedRuntime(context_window=1_000_000)
                agent = open_agent(services, record, runtime, consent=AllowAll())
                for _ in range(2):
                    batch = [fuzz_call(rng) for _ in range(min(agent.settings.max_steps, calls - sent))]
                    if not batch:
                        break
                    runtime.enqueue(*batch)
                    try:
                        result = agent.send_user_message("go on")
                    except Exception as error:  # noqa: BLE001 - what the campaign counts
                        crashes += 1
                        if len(examples) < 3:
                            examples.append(f"{type(error).__name__}: {str(error)[:120]}")
                        runtime.clear()
                        sent += len(batch)
                        continue
                    used = len(batch) - runtime.pending
                    runtime.clear()
                    sent += used or len(batch)
                    steps_seen += len(result.steps)
                    answered_ok += sum(1 for step in result.steps if step.ok)
        finally:
            services.close()
    return {
        "calls": sent,
        "steps": steps_seen,
        "crashes": crashes,
        "answered_ok": answered_ok,
        "crash_examples": examples,
        "ok": crashes == 0 and answered_ok == 0 and steps_seen == sent,
    }
