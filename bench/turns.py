"""Whole agent turns on the real model: latency, steps, call validity and KV-cache reuse.

    python -m bench.turns --json

A fresh agent (temporary MEMDESK_HOME) talks with the bundled model through the real agent loop,
tools and SQLite store. The embedder is the fast hashing one by default, so the figures are about
the model and the loop, not about loading sentence-transformers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

USER_MESSAGES = [
    "Hi! I'm Ann. I work as a nurse in Lyon.",
    "I just got back from hiking in the Alps with my sister Eva.",
    "Can you remember that my cat is called Tom?",
    "What is my cat's name?",
    "Where do I work?",
    "Thanks! Any idea for a weekend trip near Lyon?",
]


def run(turns: int, embedder_name: str, seed: int) -> dict[str, object]:
    os.environ.setdefault("MEMDESK_HOME", tempfile.mkdtemp(prefix="memdesk-bench-"))
    from desktop.app import make_runtime, open_agent, open_services
    from desktop.core.tools.context import AllowAll
    from desktop.paths import Paths

    embedder = None
    if embedder_name == "hashing":
        from desktop.core.embedding.hashing import HashingEmbedder

        embedder = HashingEmbedder()
    services = open_services(Paths.from_environment(), embedder=embedder)
    settings = services.settings_store.set("seed", seed)
    started = time.perf_counter()
    runtime = make_runtime(settings)
    load_seconds = time.perf_counter() - started
    agent = open_agent(services, services.create_agent("bench"), runtime, consent=AllowAll(), settings=settings)
    rows = []
    for text in (USER_MESSAGES * (turns // len(USER_MESSAGES) + 1))[:turns]:
        started = time.perf_counter()
        result = agent.send_user_message(text)
        seconds = time.perf_counter() - started
        steps = result.steps
        rows.append(
            {
                "user": text,
                "seconds": round(seconds, 3),
                "steps": len(steps),
                "ok_steps": sum(step.ok for step in steps),
                "functions": [step.function for step in steps],
                "replies": result.replies,
                "prompt_tokens": sum(step.stats.prompt_tokens for step in steps),
                "evaluated_tokens": sum(step.stats.evaluated_tokens for step in steps),
                "generated_tokens": sum(step.stats.generated_tokens for step in steps),
                "valid_json": sum(_is_json(step.raw) for step in steps),
            }
        )
    runtime.close()
    services.close()
    steps = sum(r["steps"] for r in rows)
    prompt = sum(r["prompt_tokens"] for r in rows)
    return {
        "model": runtime.info.model_id,
        "load_seconds": round(load_seconds, 2),
        "turns": len(rows),
        "median_turn_seconds": round(statistics.median(r["seconds"] for r in rows), 3),
        "steps": steps,
        "valid_json_rate": round(sum(r["valid_json"] for r in rows) / steps, 3),
        "ok_step_rate": round(sum(r["ok_steps"] for r in rows) / steps, 3),
        "turns_with_reply": sum(bool(r["replies"]) for r in rows),
        "evaluated_share_of_prompt": round(sum(r["evaluated_tokens"] for r in rows) / prompt, 3) if prompt else None,
        "rows": rows,
    }


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--embedder", choices=["hashing", "default"], default="hashing")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    result = run(args.turns, args.embedder, args.seed)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            if key != "rows":
                print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
