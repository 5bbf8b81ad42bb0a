"""Knowledge-graph extraction: throughput, and what it costs a conversation.

    python -m bench.graph --json

``messages_per_s``: the NLP stage (spaCy entities, mentions, dependency facts, stored in SQLite)
over a fixed set of conversational messages, through the resumable queue as the app runs it.
``model_fact_s``: the chat model's fact for one message, under the entity grammar, with the
agent's prompt as prefix (the app's way) and ``model_fact_standalone_s`` without it.

``extraction_share_of_turn``: extraction time of a message / wall time of the agent turn that
answered it. Extraction runs after the reply in its own thread, so it adds nothing to the time to
reply by construction; what it could cost is the *next* turn, if it spoilt the model's KV cache.
``next_turn_evaluated_ratio`` (shared prefix) and ``next_turn_evaluated_ratio_standalone``
compare the prompt tokens the next turn evaluates after the model's fact call with the same turn
without one (1.0: no cost; all three runs do the NLP stage, so their prompts are identical);
``next_turn_time_ratio`` is the same comparison in wall time. Both agents see identical prompts
(same clock, greedy sampling), so the only difference is the extraction.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime

from bench.common import bench_parser
from bench.report import emit

TEMPLATES = [
    "My sister {name} moved to {city} last year and works at {org}.",
    "I went hiking with {name} near {city} on Saturday.",
    "{name} is learning to play the {thing} and loves it.",
    "We had dinner at {org} in {city}, the pasta was great!",
    "I adopted a {pet} named {pet_name}.",
    "Can you remember that my friend {name} lives in {city}?",
    "I don't like {thing} much, but {name} does.",
    "lol that was fun 😀 see you tomorrow",
]
FILL = {
    "name": ["Ann", "Bob", "Carla", "Dev", "Eva", "Farid"],
    "city": ["Lisbon", "Oslo", "Lyon", "Kyoto", "Austin"],
    "org": ["Siemens", "the Blue Door cafe", "Acme", "the city library"],
    "thing": ["guitar", "chess", "piano", "pottery"],
    "pet": ["dog", "cat", "parrot"],
    "pet_name": ["Rex", "Milo", "Kiwi"],
}
TURN_A = "My brother Tom moved to Lisbon in May and now works at a small bakery there."
TURN_B = "Any idea what I could bring him when I visit?"


def messages(count: int) -> list[str]:
    out = []
    for index in range(count):
        template = TEMPLATES[index % len(TEMPLATES)]
        values = {
            key: options[(index // len(TEMPLATES) + k) % len(options)] for k, (key, options) in enumerate(FILL.items())
        }
        out.append(template.format(**values))
    return out


def agent_with_messages(services, name: str, count: int):
    """A new agent to whom the user has said ``count`` of these messages (none extracted yet)."""
    record = services.create_agent(name)
    with services.db.transaction():
        for text in messages(count):
            services.memory.recall.add(
                record.id,
                role="user",
                kind="user_message",
                content=text,
                search_text=text,
                created_at=services.clock.now(),
            )
    return record


def throughput(count: int) -> dict:
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import Paths
    from memdesk.core.embedding.hashing import HashingEmbedder
    from memdesk.core.graph.extraction import ExtractionOptions, GraphExtractor
    from memdesk.core.graph.nlp import SpacyAnalyser

    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    try:
        record = agent_with_messages(services, "throughput", count)
        analyser = SpacyAnalyser()
        started = time.perf_counter()
        analyser.analyse(["Warm up: Ann lives in Paris."])
        load_s = time.perf_counter() - started
        extractor = GraphExtractor(
            services.memory.graph, analyser, services.clock, ExtractionOptions(model_facts=False)
        )
        extractor.enqueue(record.id)
        started = time.perf_counter()
        report = extractor.run_entities(record.id)
        seconds = time.perf_counter() - started
        entities, facts = services.memory.graph.count(record.id)
        return {
            "messages": report.sources,
            "messages_per_s": round(report.sources / seconds, 1),
            "nlp_load_s": round(load_s, 2),
            "entities": entities,
            "current_facts": facts,
        }
    finally:
        services.close()


def conversation_cost(runs: int) -> dict:
    """Real model: turn A, (extraction of A), turn B; B's cost compared with and without it."""
    from memdesk.app.agents import open_agent
    from memdesk.app.runtimes import make_runtime
    from memdesk.app.services import open_services
    from memdesk.core.base.clock import ManualClock
    from memdesk.core.base.paths import Paths
    from memdesk.core.base.settings_table import Settings
    from memdesk.core.embedding.hashing import HashingEmbedder
    from memdesk.core.graph.extraction import ExtractionOptions, GraphExtractor
    from memdesk.core.graph.model_facts import ModelFactExtractor
    from memdesk.core.graph.nlp import SpacyAnalyser
    from memdesk.core.tools.context import AllowAll

    settings = Settings(context_size=4096, temperature=0.0, top_k=1, seed=3, max_answer_tokens=96, max_chained_steps=2)
    runtime = make_runtime(settings)
    analyser = SpacyAnalyser()
    analyser.analyse(["Warm up: Ann lives in Paris."])
    rows: dict[str, list] = {"none": [], "shared_prefix": [], "standalone": []}
    turn_a_s, nlp_s, fact_s = [], [], []
    try:
        for run in range(runs):
            for mode in rows:
                clock = ManualClock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
                services = open_services(Paths.from_environment(), embedder=HashingEmbedder(), clock=clock)
                try:
                    record = services.create_agent(f"{mode}-{run}")
                    agent = open_agent(services, record, runtime, consent=AllowAll(), settings=settings)
                    started = time.perf_counter()
                    agent.send_user_message(TURN_A)
                    turn_a_s.append(time.perf_counter() - started)
                    # Every mode runs the NLP stage, so the prompt's top-entities section is the same;
                    # the modes differ in the chat model's fact call only.
                    extractor = GraphExtractor(
                        services.memory.graph, analyser, clock, ExtractionOptions(model_facts=True)
                    )
                    started = time.perf_counter()
                    extractor.enqueue(record.id)
                    extractor.run_entities(record.id)
                    nlp_s.append(time.perf_counter() - started)
                    if mode != "none":
                        prefix = agent.prompt_prefix() if mode == "shared_prefix" else []
                        started = time.perf_counter()
                        extractor.run_facts(ModelFactExtractor(runtime), record.id, prefix=lambda _a, p=prefix: p)
                        fact_s.append((mode, time.perf_counter() - started))
                    clock.advance(minutes=1)
                    started = time.perf_counter()
                    result = agent.send_user_message(TURN_B)
                    seconds = time.perf_counter() - started
                    evaluated = result.steps[0].stats.evaluated_tokens if result.steps else 0
                    rows[mode].append((seconds, evaluated))
                finally:
                    services.close()
                print(
                    f"  run {run + 1} {mode}: next turn {rows[mode][-1][0]:.1f} s,"
                    f" {rows[mode][-1][1]} tokens evaluated",
                    file=sys.stderr,
                )
    finally:
        runtime.close()

    def median(mode: str, index: int) -> float:
        return statistics.median(r[index] for r in rows[mode])

    shared = [s for m, s in fact_s if m == "shared_prefix"]
    standalone = [s for m, s in fact_s if m == "standalone"]
    extraction = statistics.median(nlp_s) + statistics.median(shared)
    return {
        "turn_s": round(statistics.median(turn_a_s), 2),
        "nlp_s_per_message": round(statistics.median(nlp_s), 3),
        "model_fact_s": round(statistics.median(shared), 2),
        "model_fact_standalone_s": round(statistics.median(standalone), 2),
        "extraction_share_of_turn": round(extraction / statistics.median(turn_a_s), 3),
        "time_to_reply_added_s": 0.0,  # extraction starts after the reply is shown
        "next_turn_evaluated_ratio": round(median("shared_prefix", 1) / max(1, median("none", 1)), 3),
        "next_turn_evaluated_ratio_standalone": round(median("standalone", 1) / max(1, median("none", 1)), 3),
        "next_turn_time_ratio": round(median("shared_prefix", 0) / median("none", 0), 3),
        "next_turn_time_ratio_standalone": round(median("standalone", 0) / median("none", 0), 3),
        "runs": {mode: [(round(s, 2), e) for s, e in values] for mode, values in rows.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--messages", type=int, default=400, help="messages for the throughput measure")
    parser.add_argument("--runs", type=int, default=2, help="repetitions of the real-model conversation")
    parser.add_argument("--no-model", action="store_true", help="throughput only (no real model)")
    args = parser.parse_args(argv)
    os.environ.setdefault("MEMDESK_HOME", tempfile.mkdtemp(prefix="memdesk-bench-graph-"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = {"benchmark": "graph", **throughput(args.messages)}
    if not args.no_model:
        result.update(conversation_cost(args.runs))
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
