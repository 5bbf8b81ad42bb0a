"""Automatic recall's latency on a large memory: p50/p95 over questions, against its deadline.

    python -m bench.recall --json [--messages 10000] [--queries 60]

A temporary store gets ``--messages`` conversation messages (LoCoMo's turns from
../shared/data/locomo, repeated over later dates until there are enough; synthetic sentences when
the data is absent), all but the last 20 evicted from the context window, and 200 archival
passages, embedded with the real embedder before timing (the app embeds a few new messages per
turn). Each LoCoMo question is then the user's message: ``search_ms`` is the hybrid search of
every source (what runs under the deadline), ``gather_ms`` adds dropping what is visible and
fitting the hits in the budget with the bundled model's tokenizer (what the reply waits for in
all), ``support_ms`` the "nothing on that" judgement of the hits (memdesk.core.retrieval.support,
inside the search's deadline), on other questions (the rankers cache per query: every figure is a
cold search). ``timeouts`` counts questions whose search missed the deadline
(``auto_recall_timeout_ms``, 300 ms by default) when run as the app runs it, in a thread.
When a learned ranking model ships (memdesk/resources/ranker.json), the app's search uses it; the
same figures with the hand fusion (``hand_*``, the model switched off) are the baseline of the same
run: the two take turns question by question, so both meet the same mix of questions and of load.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.common import bench_parser, percentile
from bench.report import emit

_ROOT = Path(__file__).resolve().parents[1]
#: The shared evaluation data, beside the repository (or beside the worktrees' folder).
LOCOMO = (
    next(
        (
            p
            for p in (_ROOT.parent / "shared", _ROOT.parent.parent / "shared")
            if (p / "data" / "locomo" / "locomo_dev.json").exists()
        ),
        _ROOT.parent / "shared",
    )
    / "data"
    / "locomo"
    / "locomo_dev.json"
)
IN_CONTEXT = 20


def _corpus(path: Path, count: int) -> tuple[list[tuple[str, str]], list[str]]:
    """(speaker, text) turns and questions."""
    if path.exists():
        samples = json.loads(path.read_text(encoding="utf-8"))
        turns, questions = [], []
        for sample in samples:
            conversation = sample["conversation"]
            number = 1
            while f"session_{number}" in conversation:
                turns += [(t["speaker"], t["text"]) for t in conversation[f"session_{number}"] if t.get("text")]
                number += 1
            questions += [qa["question"] for qa in sample["qa"]]
        return (turns * (count // len(turns) + 1))[:count], questions
    words = "garden basil tomato hiking Lisbon sister cat dog night shift hospital lavender trip book piano".split()
    turns = [
        ("Ada", f"Note {n}: {words[n % len(words)]} and {words[(n * 7) % len(words)]} on day {n}.")
        for n in range(count)
    ]
    return turns, [f"What about the {w}?" for w in words]


def run(messages: int, queries: int, timeout_ms: int, model: Path | None = None) -> dict[str, object]:
    os.environ.setdefault("MEMDESK_HOME", tempfile.mkdtemp(prefix="memdesk-recall-"))
    from memdesk.app.agents import open_auto_recall
    from memdesk.app.runtimes import make_runtime
    from memdesk.app.services import open_services
    from memdesk.core.agent.context import truncate_for_context
    from memdesk.core.agent.recall.search import Visible
    from memdesk.core.base.paths import Paths

    services = open_services(Paths.from_environment())
    settings = services.settings_store.set("auto_recall_timeout_ms", timeout_ms)
    runtime = make_runtime(settings)
    record = services.create_agent("bench")
    turns, questions = _corpus(LOCOMO, messages)
    start = datetime(2023, 1, 1, tzinfo=UTC)
    with services.db.transaction():
        for n, (speaker, text) in enumerate(turns):
            services.memory.recall.add(
                record.id,
                role="user",
                kind="user_message",
                content=json.dumps({"type": "user_message", "message": text}),
                created_at=start + timedelta(minutes=37 * n),
                search_text=text,
                author=speaker,
            )
    for n in range(0, 200 * 7, 7):
        services.memory.archival.insert(record.id, turns[n % len(turns)][1])
    started = time.perf_counter()
    services.memory.recall.index_pending(record.id)
    index_seconds = time.perf_counter() - started
    last = services.memory.recall.all(record.id)[-IN_CONTEXT]
    services.agents.update(record.id, context_start_id=last.id, evicted_count=messages - IN_CONTEXT)
    if model is not None:  # another ranking model than the shipped one (bench.train_ranker --write's)
        from memdesk.core.retrieval.learned import load

        services.memory.recall.ranker.scorer = load(model)
    recall = open_auto_recall(services, settings)
    budget = int(runtime.info.context_window * settings.auto_recall_budget)

    def gather(question: str, inline: bool):
        return recall.gather(
            record.id,
            question,
            first_in_context=last.id,
            visible=Visible(),
            budget_tokens=budget,
            count_tokens=runtime.count_tokens,
            truncate=lambda text, tokens: truncate_for_context(runtime, text, tokens),
            inline=inline,
        )

    # Disjoint sets of questions: the rankers cache results per query, and every figure must be a
    # cold search, as a new user message is. The shipped model's figures and the hand fusion's
    # (``hand_*``: the model switched off) take turns question by question within the same sets:
    # with one set each, the questions' own costs and the shared machine's load between the two
    # halves of the run differed more than the two rankings do (issue 34's 152.9 against 143.2 ms).
    sets = [questions[k * 2 * queries : (k + 1) * 2 * queries] for k in range(3)]
    ranker = services.memory.recall.ranker
    shipped = ranker.scorer
    model = shipped.name if shipped is not None else None

    def ranking(turn: int) -> bool:
        """Switch to the shipped model (even turns) or the hand fusion (odd): True for the model."""
        ranker.scorer = shipped if turn % 2 == 0 else None
        return turn % 2 == 0

    gather(questions[-1], True)  # warm the caches that do not depend on the query (timeline, vectors)
    search_ms, gather_ms, placed, support_ms = [], [], [], []
    hand_search_ms, hand_gather_ms = [], []
    for turn, question in enumerate(sets[0]):
        shipped_ranks = ranking(turn)
        started = time.perf_counter()
        found = recall.search(record.id, question, first_in_context=last.id)
        (search_ms if shipped_ranks else hand_search_ms).append((time.perf_counter() - started) * 1000)
        if shipped_ranks:
            started = time.perf_counter()
            for source in recall.sources:
                if hasattr(source, "support"):
                    source.support(record.id, question, found)
            support_ms.append((time.perf_counter() - started) * 1000)
    for turn, question in enumerate(sets[1]):
        shipped_ranks = ranking(turn)
        started = time.perf_counter()
        result = gather(question, True)
        (gather_ms if shipped_ranks else hand_gather_ms).append((time.perf_counter() - started) * 1000)
        if shipped_ranks:
            placed.append(len(result.memories))
    ranker.scorer = shipped
    statuses = [gather(question, False).status for question in sets[2][:queries]]
    recall.close()
    runtime.close()
    services.close()
    return {
        "messages": messages,
        "in_context": IN_CONTEXT,
        "passages": 200,
        "queries": len(search_ms),
        "index_seconds": round(index_seconds, 1),
        "search_ms_p50": round(statistics.median(search_ms), 1),
        "search_ms_p95": round(percentile(search_ms, 0.95), 1),
        "support_ms_p50": round(statistics.median(support_ms), 2),
        "support_ms_p95": round(percentile(support_ms, 0.95), 2),
        "gather_ms_p50": round(statistics.median(gather_ms), 1),
        "gather_ms_p95": round(percentile(gather_ms, 0.95), 1),
        "timeout_ms": timeout_ms,
        "timeouts": statuses.count("timeout"),
        "failures": statuses.count("failed"),
        "memories_placed_p50": statistics.median(placed),
        "budget_tokens": budget,
        "ranking_model": model,
        "hand_search_ms_p50": round(statistics.median(hand_search_ms), 1),
        "hand_search_ms_p95": round(percentile(hand_search_ms, 0.95), 1),
        "hand_gather_ms_p50": round(statistics.median(hand_gather_ms), 1),
        "hand_gather_ms_p95": round(percentile(hand_gather_ms, 0.95), 1),
        "gather_p95_to_hand": round(percentile(gather_ms, 0.95) / percentile(hand_gather_ms, 0.95), 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--timeout-ms", type=int, default=300)
    parser.add_argument("--model", type=Path, help="rank with this model file instead of the shipped one")
    args = parser.parse_args(argv)
    emit(run(args.messages, args.queries, args.timeout_ms, args.model), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
