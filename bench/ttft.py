"""Time to first streamed character, against the time to evaluate just the new prompt tokens.

    python -m bench.ttft --json

A conversation is in the KV cache; the user sends a new message. We time (a) evaluating only the
new tokens (what prefix reuse leaves to do), and (b) ``generate_call`` until the first character
of the inner thoughts and of the ``send_message`` text reaches the stream callback. The message
ratio includes generating the thoughts that precede it, which the MemGPT format puts first.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from bench.common import bench_parser
from bench.decode import HEARTBEAT_TOOLS, MESSAGES, TOOLS
from bench.report import emit
from memdesk.core.base.settings_table import Settings
from memdesk.core.models.bundled import default_model_path
from memdesk.core.runtime.base import CallRequest, ChatMessage, sampling
from memdesk.core.runtime.llamacpp.runtime import LlamaCppRuntime
from memdesk.core.runtime.llamacpp.settings import LlamaSettings

HISTORY = [
    *MESSAGES,
    ChatMessage(
        "assistant",
        '{"function": "send_message", "params": '
        '{"inner_thoughts": "Ann is back from the Alps.", "message": "Welcome back, Ann! How was the hiking?"}}',
    ),
    ChatMessage("user", "It was wonderful, we climbed to a hut at 2,800 metres."),
    ChatMessage(
        "assistant",
        '{"function": "send_message", "params": '
        '{"inner_thoughts": "Impressive climb.", "message": "Wow, that is high! Was the view worth it?"}}',
    ),
]
NEW_MESSAGE = ChatMessage("user", "Absolutely. Next time I want to bring my sister Eva along. Any tips?")


def run(seeds: int) -> dict[str, object]:
    runtime = LlamaCppRuntime(LlamaSettings.from_settings(Settings(context_size=2048), default_model_path()))
    old, new = runtime.prompt_tokens(HISTORY), runtime.prompt_tokens([*HISTORY, NEW_MESSAGE])
    runs = []
    for seed in range(seeds):
        runtime.evaluate_prompt(old, None)
        started = time.perf_counter()
        evaluated = runtime.evaluate_prompt(new, None)
        eval_seconds = time.perf_counter() - started
        runtime.evaluate_prompt(old, None)  # back to the state before the user's message
        first: dict[str, float] = {}

        def on_event(event, first=first):  # noqa: ANN001
            first.setdefault(event.kind, time.perf_counter())

        started = time.perf_counter()
        turn = runtime.generate_call(
            CallRequest(
                [*HISTORY, NEW_MESSAGE], TOOLS, sampling(Settings(seed=seed, max_answer_tokens=200)), HEARTBEAT_TOOLS
            ),
            on_event=on_event,
        )
        runs.append(
            {
                "seed": seed,
                "evaluated_tokens": evaluated,
                "eval_seconds": eval_seconds,
                "first_thought_seconds": first.get("thought", started) - started,
                "first_message_seconds": (first["message"] - started) if "message" in first else None,
                "function": json.loads(turn.text)["function"],
                "stats_evaluated": turn.stats.evaluated_tokens,
            }
        )
    runtime.close()
    eval_median = statistics.median(r["eval_seconds"] for r in runs)
    thought_median = statistics.median(r["first_thought_seconds"] for r in runs)
    message_times = [r["first_message_seconds"] for r in runs if r["first_message_seconds"] is not None]
    message_median = statistics.median(message_times) if message_times else None
    return {
        "prompt_tokens": len(new),
        "new_tokens_evaluated": runs[0]["evaluated_tokens"],
        "eval_new_tokens_seconds": round(eval_median, 4),
        "ttft_thought_seconds": round(thought_median, 4),
        "ttft_message_seconds": round(message_median, 4) if message_median is not None else None,
        "ratio_thought": round(thought_median / eval_median, 2),
        "ratio_message": round(message_median / eval_median, 2) if message_median is not None else None,
        "runs_with_send_message": len(message_times),
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args(argv)
    result = run(args.seeds)
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
