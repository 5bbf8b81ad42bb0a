"""Time to first token of a freshly started model, with and without the disk KV prefix cache, and
the first message of a fresh install, with and without warming the model while the user types.

    python -m bench.coldstart --json [--pause 3] [--repeats 2]

What the user waits for after starting the app: a new agent (temporary MEMDESK_HOME, hashing
embedder) and its real prompt (system instructions, tools, core memory, then a user message), sent
to a runtime built by ``memdesk.app.runtimes.make_runtime``, i.e. llama.cpp in its own child process, with
the cache in ``Paths.kv_cache``. "cold" starts with an empty cache folder and evaluates the whole
prompt (and saves the system message's state); "warm" is the next start, which loads that state
and evaluates only the user message. Each run starts a new model process; ``start_seconds`` is
spawning it and loading the model, ``ttft_seconds`` is from ``generate_call`` to the first streamed
character of the model's thoughts.

"First message of a fresh install" (issue 9) starts from a new MEMDESK_HOME, so nothing is on disk:
the model is chosen (``make_runtime``: the child process starts loading), the agent opens, and in
the warmed run ``Warmup`` evaluates ``Agent.static_prefix()`` then ``Agent.memory_prefix()`` (the
memory section after it) in the background as the window does;
the user, typing since the model was chosen, presses Enter ``--pause`` seconds later (or once the
model has loaded, if that takes longer); the real agent turn runs. Reported: from
Enter to the first character of the reply (``first_message_seconds``; target <= 5 s) and to the
first streamed token, and from "model chosen" to the first reply character; each without warming too.
``make install`` runs ``memdesk warm`` (the static prefix's state saved to the disk cache of the home
it installs for): the "installed" runs do that first (its time is ``install_warm_seconds``), so the
window's warm-up loads the static prefix and evaluates only the memory section. ``first_message_seconds``
is that run, the whole fresh-install path of the README; ``first_message_window_warm_only_seconds``
is the same without the install step, ``first_message_unwarmed_seconds`` without any warming.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time

from bench.common import bench_parser
from bench.report import emit
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import sampling

USER_MESSAGE = "Hi! I'm Ann, a nurse from Lyon. I just got back from hiking in the Alps."


def _one_start(services, record, settings) -> dict[str, object]:  # noqa: ANN001
    from memdesk.app.agents import open_agent
    from memdesk.app.runtimes import make_runtime
    from memdesk.core.runtime.base import CallRequest, ChatMessage
    from memdesk.core.tools.context import AllowAll

    started = time.perf_counter()
    runtime = make_runtime(settings)
    start_seconds = time.perf_counter() - started
    try:
        agent = open_agent(services, record, runtime, consent=AllowAll(), settings=settings)
        messages = [*agent.prompt.parts().chat_messages(), ChatMessage("user", USER_MESSAGE)]
        first: list[float] = []
        started = time.perf_counter()
        request = CallRequest(
            messages,
            agent.prompt.live_specs(),
            sampling(Settings(seed=0, temperature=0, max_answer_tokens=32)),
            agent.tools.heartbeat_tools(),
        )
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


class _FirstCharacters:
    """When the model's first token (any kind) and the reply's first character streamed."""

    def __init__(self) -> None:
        self.first: dict[str, float] = {}

    def on_stream(self, event) -> None:  # noqa: ANN001
        now = time.perf_counter()
        self.first.setdefault("token", now)
        if event.kind == "message" and event.text:
            self.first.setdefault("message", now)


def _fresh_install(warm: bool, pause: float, installed: bool = False) -> dict[str, object]:
    """One first message on a fresh home (see the module docstring)."""
    home = tempfile.mkdtemp(prefix="memdesk-first-message-")
    os.environ["MEMDESK_HOME"] = home
    install_seconds = None
    if installed:  # what `make install` does last
        from memdesk.cli.main import main as memdesk

        started = time.perf_counter()
        memdesk(["warm"])
        install_seconds = round(time.perf_counter() - started, 3)
    from memdesk.app.agents import open_agent
    from memdesk.app.runtimes import make_runtime
    from memdesk.app.services import open_services
    from memdesk.core.agent.observer import AgentObserver
    from memdesk.core.base.paths import Paths
    from memdesk.core.embedding.hashing import HashingEmbedder
    from memdesk.core.runtime.base import CancelToken
    from memdesk.core.runtime.warmup import Warmup
    from memdesk.core.tools.context import AllowAll

    class Observer(AgentObserver):
        def __init__(self) -> None:
            self.characters = _FirstCharacters()

        def on_stream(self, event) -> None:  # noqa: ANN001
            self.characters.on_stream(event)

    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    warmup = Warmup()
    runtime = None
    try:
        settings = services.settings
        record = services.create_agent("bench")
        observer = Observer()
        chosen = time.perf_counter()
        runtime = make_runtime(settings)  # the model is chosen: its process starts loading
        agent = open_agent(services, record, runtime, consent=AllowAll(), observer=observer, settings=settings)
        runtime.info  # noqa: B018 - the model has loaded
        loaded = time.perf_counter()
        static_tokens = runtime.count_prompt(agent.static_prefix())
        if warm:
            warmup.start(runtime, agent.static_prefix(), agent.memory_prefix())
        # The user types from the moment the window shows (the model loads meanwhile); Send works once it has loaded.
        time.sleep(max(0.0, chosen + pause - time.perf_counter()))
        warmup.stop()  # Enter: the message goes first
        enter = time.perf_counter()
        result = agent.send_user_message(USER_MESSAGE, CancelToken())
        done = time.perf_counter()
        first = observer.characters.first
        return {
            "warmed": warm,
            "installed": installed,
            "install_warm_seconds": install_seconds,
            "load_seconds": round(loaded - chosen, 3),
            "warm_finished_before_enter": warmup.finished.is_set(),
            "warm_tokens": warmup.last_tokens if warmup.finished.is_set() else None,
            "warm_seconds": round(warmup.last_seconds, 3) if warmup.finished.is_set() else None,
            "static_prefix_tokens": static_tokens,
            "enter_to_first_token_seconds": round(first["token"] - enter, 3) if "token" in first else None,
            "enter_to_first_reply_character_seconds": round(first["message"] - enter, 3)
            if "message" in first
            else None,
            "chosen_to_first_reply_character_seconds": round(first["message"] - chosen, 3)
            if "message" in first
            else None,
            "turn_seconds": round(done - enter, 3),
            "steps": len(result.steps),
            "functions": [step.function for step in result.steps],
            "first_step_prompt_tokens": result.steps[0].stats.prompt_tokens if result.steps else None,
            "first_step_evaluated_tokens": result.steps[0].stats.evaluated_tokens if result.steps else None,
        }
    finally:
        warmup.forget()
        if runtime is not None:
            runtime.close()
        services.close()
        shutil.rmtree(home, ignore_errors=True)


def _median(runs: list[dict[str, object]], key: str) -> float | None:
    values = [r[key] for r in runs if r[key] is not None]
    return round(statistics.median(values), 3) if values else None


def first_message(repeats: int, pause: float) -> dict[str, object]:
    cold, warmed, installed = [], [], []
    for _ in range(repeats):
        cold.append(_fresh_install(False, pause))
        warmed.append(_fresh_install(True, pause))
        installed.append(_fresh_install(True, pause, installed=True))
    first = _median(installed, "enter_to_first_reply_character_seconds")
    window_only = _median(warmed, "enter_to_first_reply_character_seconds")
    unwarmed = _median(cold, "enter_to_first_reply_character_seconds")
    return {
        "typing_pause_seconds": pause,
        "first_message_seconds": first,
        "first_message_window_warm_only_seconds": window_only,
        "first_message_unwarmed_seconds": unwarmed,
        "first_message_ratio_unwarmed_over_warmed": round(unwarmed / first, 2) if first and unwarmed else None,
        "first_message_target_met": first is not None and first <= 5.0,
        "install_warm_seconds": _median(installed, "install_warm_seconds"),
        "steps_of_first_messages": [r["steps"] for r in [*installed, *warmed, *cold]],
        "first_token_seconds": _median(installed, "enter_to_first_token_seconds"),
        "first_token_unwarmed_seconds": _median(cold, "enter_to_first_token_seconds"),
        "model_chosen_to_first_message_seconds": _median(installed, "chosen_to_first_reply_character_seconds"),
        "model_chosen_to_first_message_unwarmed_seconds": _median(cold, "chosen_to_first_reply_character_seconds"),
        "static_prefix_tokens": cold[0]["static_prefix_tokens"],
        "runs": {"unwarmed": cold, "warmed": warmed, "installed": installed},
    }


def run(repeats: int) -> dict[str, object]:
    home = tempfile.mkdtemp(prefix="memdesk-coldstart-")
    os.environ["MEMDESK_HOME"] = home
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import Paths
    from memdesk.core.embedding.hashing import HashingEmbedder

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
        "same_greedy_output": all(c["text"] == w["text"] for c, w in zip(cold, warm, strict=True)),
        "cache_files": len(cache_files),
        "cache_bytes": cache_bytes,
        "runs": {"cold": cold, "warm": warm},
    }


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--repeats", type=int, default=2, help="cold/warm pairs (a cold run takes 15-30 s on 2 cores)")
    parser.add_argument("--pause", type=float, default=3.0, help="seconds the user types before the first message")
    args = parser.parse_args(argv)
    result = run(args.repeats)
    fresh = first_message(args.repeats, args.pause)
    runs = {"restart": result.pop("runs"), "first_message": fresh.pop("runs")}
    emit({**result, **fresh, "runs": runs}, args.json)
    return 0


if __name__ == "__main__":  # the model runs in a spawned child process, which re-imports this module
    sys.exit(main())
