"""Time to first token of a freshly started model, with and without the disk KV prefix cache.

    python -m bench.coldstart --json

What the user waits for after starting the app: a new agent (temporary MEMDESK_HOME, hashing
embedder) and its real prompt (system instructions, tools, core memory, then a user message), sent
to a runtime built by ``desktop.app.make_runtime``, i.e. llama.cpp in its own child process, with
the cache in ``Paths.kv_cache``. "cold" starts with an empty cache folder and evaluates the whole
prompt (and saves the system message's state); "warm" is the next start, which loads that state
and evaluates only the user message. Each run starts a new model process; ``start_seconds`` is
spawning it and loading the model, ``ttft_seconds`` is from ``generate_call`` to the first streamed
character of the model's thoughts.
"""

from __future__ import annotations

from bench.report import emit

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

USER_MESSAGE = "Hi! I'm Ann, a nurse from Lyon. I just got back from hiking in the Alps."


def _one_start(services, record, settings) -> dict[str, object]:  # noqa: ANN001
    from desktop.app import make_runtime, open_agent
    from desktop.core.runtime.base import CallRequest, ChatMessage, SamplingParams
    from desktop.core.tools.context import AllowAll

    started = time.perf_counter()
    runtime = make_runtime(settings)
    start_seconds = time.perf_counter() - started
    try:
        agent = open_agent(services, record, runtime, consent=AllowAll(), settings=settings)
        messages = [*agent._prompt_parts().chat_messages(), ChatMessage("user", USER_MESSAGE)]
        first: list[float] = []
        started = time.perf_counter()
        request = CallRequest(messages, agent._live_specs(), SamplingParams(seed=0, temperature=0, max_tokens=32), agent.tools.heartbeat_tools())
        turn = runtime.generate_call(request, on_event=lambda event: first or first.append(time.perf_counter()))
        total = time.perf_counter() - started
    finally:
        runtime.close()  # also waits for the cache file to be written
    return {
        "start_seconds": round(start_seconds, 3),
        "ttft_seconds": round((first[0] if first else started + total) - started, 3),
        "call_seconds": round(total, 3),
        "prompt_tokens": turn.stats.prompt_tokens,
        "evaluated_tokens": turn.stats.evaluated_tokens,
        "text": turn.text,
    }


def run(repeats: int) -> dict[str, object]:
    home = tempfile.mkdtemp(prefix="memdesk-coldstart-")
    os.environ["MEMDESK_HOME"] = home
    from desktop.app import open_services
    from desktop.core.embedding.hashing import HashingEmbedder
    from desktop.paths import Paths

    paths = Paths.from_environment()
    services = open_services(paths, embedder=HashingEmbedder())
    try:
        settings = services.settings
        record = services.create_agent("bench")
        cold, warm = [], []
        for _ in range(repeats):
            shutil.rmtree(paths.kv_cache, ignore_errors=True)
            cold.append(_one_start(services, record, settings))
            warm.append(_one_start(services, record, settings))
        cache_files = sorted(paths.kv_cache.glob("*.kv"))
        cache_bytes = sum(p.stat().st_size for p in cache_files)
    finally:
        services.close()
        shutil.rmtree(home, ignore_errors=True)
    cold_ttft = round(statistics.median(r["ttft_seconds"] for r in cold), 3)
    warm_ttft = round(statistics.median(r["ttft_seconds"] for r in warm), 3)
    cold_start = statistics.median(r["start_seconds"] for r in cold)
    warm_start = statistics.median(r["start_seconds"] for r in warm)
    return {
        "prompt_tokens": cold[0]["prompt_tokens"],
        "cold_evaluated_tokens": cold[0]["evaluated_tokens"],
        "warm_evaluated_tokens": warm[0]["evaluated_tokens"],
        "cold_ttft_seconds": cold_ttft,
        "warm_ttft_seconds": warm_ttft,
        "ttft_ratio_cold_over_warm": round(cold_ttft / warm_ttft, 1) if warm_ttft else None,
        "cold_start_plus_ttft_seconds": round(cold_start + cold_ttft, 3),
        "warm_start_plus_ttft_seconds": round(warm_start + warm_ttft, 3),
        "same_greedy_output": all(c["text"] == w["text"] for c, w in zip(cold, warm)),
        "cache_files": len(cache_files),
        "cache_bytes": cache_bytes,
        "runs": {"cold": cold, "warm": warm},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--repeats", type=int, default=2, help="cold/warm pairs (a cold run takes 15-30 s on 2 cores)")
    args = parser.parse_args(argv)
    result = run(args.repeats)
    emit(result, args.json)
    return 0


if __name__ == "__main__":  # the model runs in a spawned child process, which re-imports this module
    sys.exit(main())
