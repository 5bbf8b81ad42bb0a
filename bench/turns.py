"""Whole agent turns on the real model: latency, steps, call validity and KV-cache reuse.

    python -m bench.turns --json

``reeval_ratio`` = prompt tokens evaluated / new prompt tokens, over every step but the first
(an empty cache) and those right after an eviction (which re-evaluates from the summary on and is
reported apart). "New" tokens are those of a step's prompt beyond the previous step's prompt plus
its output, which is what an ideal KV cache already holds. Memory edits are included: the memory
section stays put and later edits arrive as messages (memdesk/core/agent/memory_view.py), so an
edit should cost only its own new tokens. Steps right after one (the agent's own edit call, or the
user's edit of the human block halfway through, as in the window's memory panel) are also
reported apart as ``reeval_ratio_after_edit`` so the claim can be checked.

A fresh agent (temporary MEMDESK_HOME) talks with the bundled model through the real agent loop,
tools and SQLite store. The embedder is the fast hashing one by default, so the figures are about
the model and the loop, not about loading sentence-transformers.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time

from bench.common import bench_parser, open_bench_agent
from bench.report import emit

USER_MESSAGES = [
    "Hi! I'm Ann. I work as a nurse in Lyon.",
    "I just got back from hiking in the Alps with my sister Eva.",
    "Can you remember that my cat is called Tom?",
    "What is my cat's name?",
    "Where do I work?",
    "Thanks! Any idea for a weekend trip near Lyon?",
]


def run(turns: int, embedder_name: str, seed: int, make_runtime=None) -> dict[str, object]:
    """``make_runtime``: the app's (the bundled model) unless given."""
    os.environ.setdefault("MEMDESK_HOME", tempfile.mkdtemp(prefix="memdesk-bench-"))
    evictions = EvictionCounter()
    opened = open_bench_agent(embedder_name, seed, observer=evictions, make_runtime=make_runtime)
    services, runtime, agent, load_seconds = opened.services, opened.runtime, opened.agent, opened.load_seconds
    reuse = {"all": [0, 0], "after_edit": [0, 0], "after_eviction": [0, 0]}  # [evaluated, new]
    previous_end: int | None = None
    edited = False
    rows = []
    for number, text in enumerate((USER_MESSAGES * (turns // len(USER_MESSAGES) + 1))[:turns]):
        if number == turns // 2:
            # The user edits a core memory block between turns (as in the window's memory panel):
            # the next step must re-evaluate from the memory section on, and only that.
            block = services.memory.core.get(agent.id, "human")
            services.memory.core.set_value(agent.id, "human", block.value + "\nLikes hiking.")
            edited = True
        started = time.perf_counter()
        result = agent.send_user_message(text)
        seconds = time.perf_counter() - started
        steps = result.steps
        for step in steps:
            if previous_end is not None:
                buckets = ["after_eviction"] if evictions.pending else ["all", "after_edit"] if edited else ["all"]
                for name in buckets:
                    reuse[name][0] += step.stats.evaluated_tokens
                    reuse[name][1] += max(1, step.stats.prompt_tokens - previous_end)
            evictions.pending = False
            edited = step.ok and step.function in EDITS
            previous_end = step.stats.prompt_tokens + step.stats.generated_tokens
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
    opened.close()
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
        "reeval_ratio": _ratio(reuse["all"]),
        "reeval_ratio_after_edit": _ratio(reuse["after_edit"]),
        "steps_per_turn_p50": statistics.median(r["steps"] for r in rows),
        "steps_per_turn_max": max(r["steps"] for r in rows),
        "after_edit_evaluated_new": reuse["after_edit"],
        "after_eviction_evaluated_new": reuse["after_eviction"],
        "evictions": evictions.count,
        "rows": rows,
    }


#: Functions that change memory (which used to re-render the section above the message queue).
EDITS = {"core_memory_append", "core_memory_replace", "archival_memory_insert"}


class EvictionCounter:
    """Observer noting evictions: the step after one re-evaluates from the summary on."""

    def __init__(self) -> None:
        from memdesk.core.agent.observer import AgentObserver

        self._base = AgentObserver()
        self.count = 0
        self.pending = False

    def __getattr__(self, name: str):  # every other observer callback: do nothing
        return getattr(self._base, name)

    def on_event(self, kind: str, text: str) -> None:
        if kind == "eviction":
            self.count += 1
            self.pending = True


def _ratio(pair: list[int]) -> float | None:
    evaluated, new = pair
    return round(evaluated / new, 3) if new else None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--embedder", choices=["hashing", "default"], default="hashing")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    result = run(args.turns, args.embedder, args.seed)
    emit(result, args.json, details="rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
