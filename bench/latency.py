"""Replies in seconds: the real agent over a fixed 20-turn conversation, against this run's floor.

    python -m bench.latency --json

A fresh home (temporary MEMDESK_HOME: empty store, empty disk KV cache) and the bundled model talk
through the real agent loop, tools, store and embedder, over ``CONVERSATION``. Two memory edits
happen on the way: the user edits the human block between turns (as in the memory panel), and
the agent edits memory itself (on ``AGENT_EDIT_TURN`` its first step may only call
core_memory_append: the grammar forces it, the prompt is unchanged).

Per turn: the time from Enter to the first character of the reply (the first streamed piece of a
send_message text), the whole turn, steps, prompt tokens evaluated and tokens generated. The
*floor* of a turn is what an ideal runtime would need: evaluate only that turn's new prompt tokens
and decode what was generated, at the speeds measured in that very step (the runtime times its
prompt evaluation apart from decoding), so the ratios hold on a busy machine whose load changes
during the run. A runtime that does not time its evaluation falls back to speeds fitted to every
step of the run (``speeds``). ``reeval_ratio`` = prompt tokens evaluated / new prompt tokens over every step but the
first, memory edits included (evictions are reported apart).

Where the tokens before each reply went (issue 24): ``tokens_before_reply`` counts, per turn, the
tokens of every call up to the first character of its send_message text, split into inner thoughts,
the other calls' arguments and JSON structure (keys, names, punctuation, heartbeat flags);
``step_functions`` and ``functions_before_reply`` name the functions that took the steps. Token
counts and ratios do not move with the machine's load; seconds do (``machine`` gives the CPU and
the load average at the start and the end).

Replies that copy (issue 35): ``repeated_replies`` counts the turns whose reply copies the user's
message or a recent reply (agent/repetition.py's test, over the same recent messages), in a first
pass with the check off (``before``) and in the main pass with it on (``after``), both in this run
on fresh homes; ``repeat_check_cost`` is what the check costs: the seconds of the regenerations
within the main pass, as a share of its turns, and the ratio of the two passes' turn seconds
(their conversations differ once a reply does, so that ratio is the rougher one).

The issue's targets are printed beside the figures; nothing here is asserted (shared machines are
noisy): ``targets_met`` says which hold in this run. ``--quick``: three turns, hashing embedder.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter

from bench.common import bench_parser, open_bench_agent, percentile
from bench.report import emit
from memdesk.core.agent.repetition import REPEATED, copied

CONVERSATION = [
    "Hi, I am Ada. I live in Lisbon and I love gardening.",
    "I grow tomatoes and basil on my balcony.",
    "The basil keeps wilting in the afternoon sun. Any idea why?",
    "I water it every morning before work.",
    "I work as a nurse at a hospital, mostly night shifts.",
    "My sister Eva visits next weekend.",
    "She loves hiking. Do you know good trails near Lisbon?",
    "We might go to Sintra.",  # the user edits the human block before this turn
    "What do you remember about me?",
    "My cat is called Tom and he sleeps on the basil pots.",
    "Should I move the pots inside?",
    "I also want to plant lavender.",
    "Lavender smells like my grandmother's house.",
    "Please remember that my favourite colour is green.",  # the agent edits memory on this turn
    "What was my cat's name again?",
    "I have a night shift tonight, so I need to sleep soon.",
    "Tell me something cheerful.",
    "Eva just texted: she is bringing her dog.",
    "Do dogs and cats get along usually?",
    "Thanks, good night!",
]
USER_EDIT_TURN = 7
AGENT_EDIT_TURN = 13
TARGETS = {  # issue 24's goals, and issue 22's first message of a fresh install
    "first_reply_p50": ("<=", 4.0),
    "first_reply_p95": ("<=", 8.0),
    "tokens_before_reply_p50": ("<=", 40),
    "steps_per_turn_p50": ("<=", 1),
    "reeval_ratio": ("<=", 1.05),
    "first_reply_over_floor_p50": ("<=", 1.2),
    "first_message_seconds": ("<=", 5.0),
}


class Timing:
    """Observer that timestamps the first reply character and counts evictions."""

    def __init__(self) -> None:
        from memdesk.core.agent.observer import AgentObserver

        self._base = AgentObserver()
        self.first_reply: float | None = None
        self.evictions = 0
        self.evicted_this_turn = False
        self.regenerated = 0  # replies generated again because they copied (agent/repetition.py)
        self.regeneration_seconds = 0.0
        self._regenerating_since: float | None = None

    def __getattr__(self, name: str):  # every other observer callback: do nothing
        return getattr(self._base, name)

    def on_stream(self, event) -> None:
        if event.kind == "message" and event.text and self.first_reply is None:
            self.first_reply = time.perf_counter()

    def on_event(self, kind: str, text: str) -> None:
        if kind == "eviction":
            self.evictions += 1
            self.evicted_this_turn = True
        elif kind == REPEATED:
            self.regenerated += 1
            self._regenerating_since = time.perf_counter()

    def on_step(self, step) -> None:
        if self._regenerating_since is not None:
            self.regeneration_seconds += time.perf_counter() - self._regenerating_since
            self._regenerating_since = None


def speeds(steps) -> tuple[float, float]:
    """(seconds per evaluated prompt token, seconds per generated token) of this run's own steps:
    the least-squares fit of each step's model time (evaluation plus constrained decoding) to its
    evaluated and generated tokens, so the floor moves with the machine's load during the run."""
    import numpy as np

    rows = np.array([[s.stats.evaluated_tokens, s.stats.generated_tokens] for s in steps], dtype=float)
    seconds = np.array([s.stats.seconds for s in steps], dtype=float)
    (per_eval, per_token), *_ = np.linalg.lstsq(rows, seconds, rcond=None)
    return max(float(per_eval), 1e-6), max(float(per_token), 1e-6)


def step_speeds(step, fitted: tuple[float, float]) -> tuple[float, float]:
    """(seconds per evaluated prompt token, seconds per generated token) as measured in ``step``;
    ``fitted`` when the runtime did not time its prompt evaluation."""
    stats = step.stats
    if stats.evaluation_seconds <= 0:
        return fitted
    decoding = max(0.0, stats.seconds - stats.evaluation_seconds)
    return stats.evaluation_seconds / max(1, stats.evaluated_tokens), decoding / max(1, stats.generated_tokens)


REPLY_MARKER = '"message": "'
SPLIT = ("inner_thoughts", "arguments", "structure")


def _reply_prefix(raw: str) -> str:
    """The part of a send_message call written before the first character of its text."""
    index = raw.find(REPLY_MARKER)
    return raw[: index + len(REPLY_MARKER)] if index >= 0 else raw


def _reply_prefix_tokens(runtime, raw: str) -> int:
    """Tokens the model generated before the first character of its send_message text."""
    return runtime.count_tokens(_reply_prefix(raw))


def _value_tokens(count_tokens, value) -> int:
    """Tokens of a value as the call spells it; a string's quotes are JSON structure."""
    text = json.dumps(value, ensure_ascii=False)
    return count_tokens(text[1:-1] if isinstance(value, str) else text)


def tokens_before_reply(count_tokens, raws: list[str]) -> dict[str, int]:
    """Where the tokens generated before the first reply character went: ``raws`` are the calls
    of a turn up to and including its send_message. Split into the inner thoughts of every one of
    them, the other calls' arguments, and the JSON structure (keys, names, punctuation,
    heartbeats), which is what is left of the total."""
    split = dict.fromkeys(SPLIT, 0)
    total = 0
    for position, raw in enumerate(raws):
        reply = position == len(raws) - 1
        text = _reply_prefix(raw) if reply else raw
        total += count_tokens(text)
        try:
            params = dict(json.loads(raw).get("params", {}))
        except (ValueError, AttributeError):
            continue  # invalid JSON: all structure, as far as this split can tell
        split["inner_thoughts"] += _value_tokens(count_tokens, params.pop("inner_thoughts", ""))
        if not reply:
            params.pop("request_heartbeat", None)
            split["arguments"] += sum(_value_tokens(count_tokens, value) for value in params.values())
    split["structure"] = max(0, total - split["inner_thoughts"] - split["arguments"])
    return {**split, "total": total}


def run(turns: int, embedder_name: str, seed: int, home: str | None = None) -> dict[str, object]:
    """The main pass (the repeat check on) and, before it on a fresh home, the same conversation
    with the check off: ``repeated_replies`` before and after, and what the check costs."""
    home = home or tempfile.mkdtemp(prefix="memdesk-latency-")
    before = run_pass(turns, embedder_name, seed, os.path.join(home, "check-off"), repeat_check=False)
    figures = run_pass(turns, embedder_name, seed, os.path.join(home, "check-on"), repeat_check=True)
    turn_seconds = [sum(r["turn_seconds"] for r in f["rows"]) for f in (before, figures)]  # type: ignore[attr-defined]
    figures["repeated_replies"] = {"before": before["repeated_replies"], "after": figures["repeated_replies"]}
    figures["repeat_check_cost"] = {
        "regenerated_replies": figures.pop("regenerated_replies"),
        "regeneration_seconds": figures.pop("regeneration_seconds"),
        "regeneration_share_of_turn_seconds": round(figures["regeneration_seconds_share"], 3),  # type: ignore[arg-type]
        "turn_seconds_after_over_before": round(turn_seconds[1] / turn_seconds[0], 3) if turn_seconds[0] else None,
        "turn_seconds_before_after": [round(turn_seconds[0], 2), round(turn_seconds[1], 2)],
        "load_average_1min_before_pass": before["machine"]["load_average_1min"],  # type: ignore[index]
    }
    figures.pop("regeneration_seconds_share")
    return figures


def run_pass(turns: int, embedder_name: str, seed: int, home: str, *, repeat_check: bool) -> dict[str, object]:
    """One conversation of ``turns`` on a fresh home; ``repeat_check`` False turns the copy check off."""
    os.makedirs(home, exist_ok=True)
    os.environ["MEMDESK_HOME"] = home  # a fresh install: empty store, empty KV cache on disk
    load_before = os.getloadavg()[0]
    timing = Timing()
    opened = open_bench_agent(embedder_name, seed, observer=timing, preload_embedder=True)
    services, runtime, agent, load_seconds = opened.services, opened.runtime, opened.agent, opened.load_seconds
    window = opened.settings.repeat_check_messages  # the recent messages a reply must not copy
    if not repeat_check:
        agent.settings = dataclasses.replace(agent.settings, repeat_check_messages=0)
    said: list[str] = []  # the conversation so far, newest first
    warm_seconds = _warm(runtime, agent)

    rows = []
    reuse = {"all": [0, 0], "after_eviction": [0, 0]}  # [evaluated, new]
    previous_end: int | None = None
    conversation = (CONVERSATION * (turns // len(CONVERSATION) + 1))[:turns]
    for number, text in enumerate(conversation):
        if number == USER_EDIT_TURN:
            block = services.memory.core.get(agent.id, "human")
            services.memory.core.set_value(agent.id, "human", (block.value + "\nHer sister Eva likes hiking.").strip())
        restore = _force_first_step(agent, "core_memory_append") if number == AGENT_EDIT_TURN else None
        timing.first_reply, timing.evicted_this_turn = None, False
        regenerated = timing.regenerated
        started = time.perf_counter()
        result = agent.send_user_message(text)
        ended = time.perf_counter()
        said.insert(0, text)
        reply = result.replies[0] if result.replies else None
        repeated = reply is not None and copied(reply, said[:window]) is not None
        said[:0] = reversed(result.replies)
        if restore is not None:
            restore()
        steps = result.steps
        new_tokens = []
        for step in steps:
            new = step.stats.prompt_tokens if previous_end is None else max(1, step.stats.prompt_tokens - previous_end)
            new_tokens.append(new)
            if previous_end is not None:
                bucket = reuse["after_eviction" if timing.evicted_this_turn else "all"]
                bucket[0] += step.stats.evaluated_tokens
                bucket[1] += new
            previous_end = step.stats.prompt_tokens + step.stats.generated_tokens
        reply_index = next((i for i, s in enumerate(steps) if s.ok and s.function == "send_message"), None)
        rows.append(
            {
                "user": text,
                "steps": len(steps),
                "functions": [s.function for s in steps],
                "reply": reply,
                "repeated": repeated,
                "regenerated": timing.regenerated - regenerated,
                "first_reply_seconds": round(timing.first_reply - started, 3) if timing.first_reply else None,
                "turn_seconds": round(ended - started, 3),
                "evaluated_tokens": sum(s.stats.evaluated_tokens for s in steps),
                "new_tokens": sum(new_tokens),
                "generated_tokens": sum(s.stats.generated_tokens for s in steps),
                "model_seconds": round(sum(s.stats.seconds for s in steps), 3),
                "_reply_index": reply_index,
                "_new": new_tokens,
                "_steps": steps,
            }
        )
    every_step = [step for row in rows for step in row["_steps"]]
    fitted = speeds(every_step)
    for row in rows:
        steps, index = row.pop("_steps"), row.pop("_reply_index")
        new = row.pop("_new")
        rates = [step_speeds(step, fitted) for step in steps]
        costs = [n * e + s.stats.generated_tokens * g for n, s, (e, g) in zip(new, steps, rates, strict=True)]
        row["floor_seconds"] = round(sum(costs), 3)
        row["steps_before_reply"] = index if index is not None else len(steps)
        row["tokens_before_reply"] = (
            tokens_before_reply(runtime.count_tokens, [s.raw for s in steps[: index + 1]])
            if index is not None
            else None
        )
        if index is not None:
            per_eval, per_token = rates[index]
            before = sum(costs[:index]) + new[index] * per_eval
            row["first_reply_floor_seconds"] = round(
                before + _reply_prefix_tokens(runtime, steps[index].raw) * per_token, 3
            )
        else:
            row["first_reply_floor_seconds"] = None
    per_eval, per_token = _overall_speeds(every_step, fitted)
    tool_tokens = agent.tool_costs()
    budget = agent.budget()
    opened.close()
    figures = _summary(
        rows, reuse, timing, load_seconds, warm_seconds, per_eval, per_token, tool_tokens, budget, runtime.info.model_id
    )
    figures["repeat_check"] = repeat_check
    figures["repeated_replies"] = sum(1 for r in rows if r["repeated"])
    figures["regenerated_replies"] = timing.regenerated
    figures["regeneration_seconds"] = round(timing.regeneration_seconds, 3)
    total = sum(r["turn_seconds"] for r in rows)
    figures["regeneration_seconds_share"] = timing.regeneration_seconds / total if total else 0.0
    # Other work on the machine slows both a turn and its floor: ratios and token counts hold, seconds do not.
    figures["machine"] = {
        "cpu": _cpu_name(),
        "cores": os.cpu_count(),
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    return figures


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            return next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "unknown")
    except OSError:
        return "unknown"


def _overall_speeds(steps, fitted: tuple[float, float]) -> tuple[float, float]:
    """The run's average speeds, as measured (or ``fitted`` when the runtime does not time them)."""
    timed = [s for s in steps if s.stats.evaluation_seconds > 0]
    if not timed:
        return fitted
    evaluation = sum(s.stats.evaluation_seconds for s in timed)
    decoding = sum(max(0.0, s.stats.seconds - s.stats.evaluation_seconds) for s in timed)
    return evaluation / max(1, sum(s.stats.evaluated_tokens for s in timed)), decoding / max(
        1, sum(s.stats.generated_tokens for s in timed)
    )


def _warm(runtime, agent) -> float | None:
    """Warm the static prefix and the memory section the way the app does at start-up, when the runtime can."""
    warm = getattr(runtime, "warm", None)
    if warm is None:
        return None
    started = time.perf_counter()
    warm(agent.static_prefix())
    warm(agent.memory_prefix())
    return round(time.perf_counter() - started, 2)


def _force_first_step(agent, function: str):
    """Make the next turn's first step call ``function`` (grammar only: the prompt is unchanged)."""
    full = agent.prompt.live_specs
    state = {"first": True}

    def specs():
        offered = full()
        if state["first"]:
            state["first"] = False
            return [s for s in offered if s.name == function] or offered
        return offered

    agent.prompt.live_specs = specs
    return lambda: setattr(agent.prompt, "live_specs", full)


def _summary(
    rows, reuse, timing, load_seconds, warm_seconds, per_eval, per_token, tool_tokens, budget, model
) -> dict[str, object]:
    first = [r["first_reply_seconds"] for r in rows if r["first_reply_seconds"] is not None]
    floors = [
        r["first_reply_floor_seconds"]
        for r in rows
        if r["first_reply_seconds"] is not None and r["first_reply_floor_seconds"]
    ]
    ratios = [
        r["first_reply_seconds"] / r["first_reply_floor_seconds"]
        for r in rows
        if r["first_reply_seconds"] is not None and r["first_reply_floor_seconds"]
    ]
    steps = [r["steps"] for r in rows]
    before = [r["tokens_before_reply"] for r in rows if r["tokens_before_reply"] is not None]
    evaluated, new = reuse["all"]
    figures = {
        "model": model,
        "turns": len(rows),
        "load_seconds": round(load_seconds, 2),
        "warm_seconds": warm_seconds,
        "first_message_seconds": rows[0]["first_reply_seconds"] if rows else None,
        "first_reply_p50": round(statistics.median(first), 3) if first else None,
        "first_reply_p95": round(percentile(first, 0.95), 3) if first else None,
        "first_reply_floor_p50": round(statistics.median(floors), 3) if floors else None,
        "first_reply_over_floor_p50": round(statistics.median(ratios), 3) if ratios else None,
        "turn_p50": round(statistics.median(r["turn_seconds"] for r in rows), 3),
        "turn_floor_p50": round(statistics.median(r["floor_seconds"] for r in rows), 3),
        "outside_model_seconds_p50": round(statistics.median(r["turn_seconds"] - r["model_seconds"] for r in rows), 3),
        "turns_with_reply": len(first),
        "steps_per_turn_p50": statistics.median(steps),
        "steps_per_turn_p95": percentile(steps, 0.95),
        "steps_per_turn_max": max(steps),
        # Which functions took the steps, and which of them came before the reply.
        "step_functions": dict(Counter(f for r in rows for f in r["functions"]).most_common()),
        "functions_before_reply": dict(
            Counter(f for r in rows for f in r["functions"][: r["steps_before_reply"]]).most_common()
        ),
        "tokens_before_reply_p50": statistics.median(b["total"] for b in before) if before else None,
        "tokens_before_reply_p95": percentile([b["total"] for b in before], 0.95) if before else None,
        # Each part's own median, and its share of every token generated before a reply in the run.
        "tokens_before_reply_split_p50": {part: statistics.median(b[part] for b in before) for part in SPLIT}
        if before
        else None,
        "tokens_before_reply_split_share": _shares(before),
        "evaluated_tokens_per_turn_p50": statistics.median(r["evaluated_tokens"] for r in rows),
        "generated_tokens_per_turn_p50": statistics.median(r["generated_tokens"] for r in rows),
        "reeval_ratio": round(evaluated / new, 3) if new else None,
        "evaluated_new": [evaluated, new],
        "evictions": timing.evictions,
        "after_eviction_evaluated_new": reuse["after_eviction"],
        "seconds_per_prompt_token": round(per_eval, 5),
        "seconds_per_generated_token": round(per_token, 5),
        "prompt_sections": budget.as_dict()["sections"],
        "tool_tokens": tool_tokens,
    }
    figures["targets"] = {name: f"{op} {value}" for name, (op, value) in TARGETS.items()}
    figures["targets_met"] = {
        name: (figures[name] is not None and figures[name] <= value) for name, (_op, value) in TARGETS.items()
    }
    figures["rows"] = rows
    return figures


def _shares(before: list[dict[str, int]]) -> dict[str, float] | None:
    total = sum(b["total"] for b in before)
    return {part: round(sum(b[part] for b in before) / total, 3) for part in SPLIT} if total else None


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--turns", type=int, default=len(CONVERSATION))
    parser.add_argument("--embedder", choices=["default", "hashing"], default="default")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a fast check: 3 turns with the hashing embedder")
    args = parser.parse_args(argv)
    turns, embedder = (3, "hashing") if args.quick else (args.turns, args.embedder)
    emit(run(turns, embedder, args.seed), args.json, details="rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
