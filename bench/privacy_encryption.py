"""What encryption at rest costs: the same work on an encrypted store and on a plain one, in one run.

    python -m bench.privacy_encryption --json [--quick]

Two temporary homes hold the same store (``--messages`` conversation messages with their full-text
rows and vectors, the hashing embedder), one plain (sqlean) and one encrypted (SQLCipher with a
passphrase). Rounds alternate between them, so load on the shared machine hits both. Measured:

* open: ``open_services`` and a first read, median; the passphrase's key derivation (about a quarter
  of a second, paid once per process: later connections reuse the derived key) is reported apart
  as ``encrypted_first_open_s`` and left out of the ratio;
* search: conversation search as the agent runs it (hybrid: full-text and vectors), p50;
* ingest: a folder of text files (200 of them, 600 passages) through the ingestion pipeline into
  archival memory, passages/s;
* turn: a 20-turn conversation through the real agent loop on the scripted runtime (each turn
  searches the conversation, then answers), the median turn time.

Each ``*_ratio`` is encrypted over plain (goal <= 1.15); ``ingest_throughput_ratio`` is encrypted
throughput over plain's, so there the goal is >= 1/1.15 (0.87). Nothing is asserted.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.common import bench_parser
from bench.report import emit

PASSPHRASE = "correct horse battery staple"
WORDS = (
    "the a trip lisbon sister piano garden morning coffee river mountain book friend dinner music work "
    "yesterday tomorrow holiday camping museum painting doctor school project guitar basil kayak"
).split()
GOAL = 1.15


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _services(home: Path, key: str | None):
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import Paths
    from memdesk.core.embedding.hashing import HashingEmbedder

    return open_services(Paths(home), key=key, embedder=HashingEmbedder())


def build(home: Path, key: str | None, messages: int) -> None:
    services = _services(home, key)
    try:
        agent = services.create_agent("sam")
        services.settings_store.set("login_after_minutes", 0)
        rng = random.Random(1)
        when = datetime(2026, 1, 1, tzinfo=UTC)
        rows = []
        for i in range(messages):
            text = _text(rng, 25)
            rows.append((agent.id, (when + timedelta(minutes=i)).isoformat(), "user", "user_message", text, text))
        with services.db.transaction():
            services.db.executemany(
                "INSERT INTO messages(agent_id, created_at, role, kind, content, search_text) VALUES (?,?,?,?,?,?)",
                rows,
            )
        services.memory.recall.index_pending(agent.id)
    finally:
        services.close()


def time_open(home: Path, key: str | None) -> float:
    started = time.perf_counter()
    services = _services(home, key)
    services.agents.list()
    elapsed = time.perf_counter() - started
    services.close()
    return elapsed


def time_searches(home: Path, key: str | None, queries: list[str]) -> list[float]:
    services = _services(home, key)
    try:
        agent = services.agents.find("sam")
        services.memory.recall.rank(agent.id, queries[0])  # loads the vector index once
        times = []
        for query in queries:
            started = time.perf_counter()
            services.memory.recall.search_ranked(agent.id, query)
            times.append(time.perf_counter() - started)
        return times
    finally:
        services.close()


def time_ingest(home: Path, key: str | None, corpus: Path) -> tuple[float, int]:
    services = _services(home, key)
    try:
        agent = services.agents.find("sam")
        before = services.db.scalar("SELECT count(*) FROM passages")
        started = time.perf_counter()
        services.ingestor().ingest(sorted(corpus.iterdir()), agent.id)
        elapsed = time.perf_counter() - started
        passages = services.db.scalar("SELECT count(*) FROM passages") - before
        services.db.execute("DELETE FROM documents")  # the next round ingests the same files anew
        return elapsed, passages
    finally:
        services.close()


def time_turns(home: Path, key: str | None, turns: int) -> list[float]:
    from memdesk.app.agents import open_agent
    from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
    from memdesk.core.tools.context import AllowAll

    services = _services(home, key)
    try:
        runtime = ScriptedRuntime(context_window=32768)
        agent = open_agent(services, services.agents.find("sam"), runtime, consent=AllowAll())
        rng = random.Random(2)
        times = []
        for turn in range(turns):
            runtime.enqueue(
                call("conversation_search", "look it up", heartbeat=True, query=_text(rng, 2)),
                say(f"Noted, turn {turn}."),
            )
            started = time.perf_counter()
            agent.send_user_message(_text(rng, 15))
            times.append(time.perf_counter() - started)
        return times
    finally:
        services.close()


def _corpus(folder: Path, files: int) -> Path:
    corpus = folder / "corpus"
    corpus.mkdir()
    rng = random.Random(3)
    for i in range(files):
        (corpus / f"note-{i:03d}.txt").write_text("\n\n".join(_text(rng, 120) for _ in range(6)), encoding="utf-8")
    return corpus


def _ratio(encrypted: float, plain: float) -> float:
    return round(encrypted / plain, 3) if plain else float("nan")


def measure(quick: bool = False, *, messages: int | None = None, rounds: int | None = None) -> dict:
    """The figures; ``quick``: a small store and one round (a check that it runs, not a measurement)."""
    messages = messages or (1000 if quick else 20_000)
    rounds = rounds or (1 if quick else 3)
    # 200 files (600 passages) a round: 60 passages took a tenth of a second, too short to judge.
    turns, queries_n, files = (4, 10, 3) if quick else (20, 100, 200)
    rng = random.Random(4)
    queries = [_text(rng, 2) for _ in range(queries_n)]
    figures: dict[str, dict[str, list[float]]] = {
        mode: {"open": [], "search": [], "ingest": [], "turn": []} for mode in ("plain", "encrypted")
    }
    with tempfile.TemporaryDirectory(prefix="memdesk-bench-") as folder:
        base = Path(folder)
        corpus = _corpus(base, files)
        homes = {"plain": (base / "plain", None), "encrypted": (base / "encrypted", PASSPHRASE)}
        started = time.perf_counter()
        build(*homes["plain"], messages)
        build_plain_s = time.perf_counter() - started
        started = time.perf_counter()
        build(*homes["encrypted"], messages)
        build_encrypted_s = time.perf_counter() - started
        # The first open of this process derives the key: measured by a fresh derivation here.
        from memdesk.core.storage import driver

        driver.forget_derived_keys()  # the cache is the point being measured
        first_open = time_open(*homes["encrypted"])
        passages = 0
        for round_number in range(rounds):
            order = ("plain", "encrypted") if round_number % 2 == 0 else ("encrypted", "plain")
            for mode in order:
                home, key = homes[mode]
                figures[mode]["open"].extend(time_open(home, key) for _ in range(5))
                figures[mode]["search"].extend(time_searches(home, key, queries))
                seconds, passages = time_ingest(home, key, corpus)
                figures[mode]["ingest"].append(passages / seconds)
                figures[mode]["turn"].extend(time_turns(home, key, turns))
        sizes = {mode: (home / "memdesk.sqlite3").stat().st_size for mode, (home, _key) in homes.items()}
    med = {mode: {name: statistics.median(values) for name, values in parts.items()} for mode, parts in figures.items()}
    ratios = {
        "open_time_ratio": _ratio(med["encrypted"]["open"], med["plain"]["open"]),
        "search_p50_ratio": _ratio(med["encrypted"]["search"], med["plain"]["search"]),
        "ingest_throughput_ratio": _ratio(med["encrypted"]["ingest"], med["plain"]["ingest"]),
        "turn_time_ratio": _ratio(med["encrypted"]["turn"], med["plain"]["turn"]),
    }
    return {
        **ratios,
        "goal": GOAL,
        "targets_met": {
            "open_time_ratio": ratios["open_time_ratio"] <= GOAL,
            "search_p50_ratio": ratios["search_p50_ratio"] <= GOAL,
            "ingest_throughput_ratio": ratios["ingest_throughput_ratio"] >= 1 / GOAL,
            "turn_time_ratio": ratios["turn_time_ratio"] <= GOAL,
        },
        "messages": messages,
        "rounds": rounds,
        "turns_per_round": turns,
        "queries_per_round": queries_n,
        "ingest_passages": passages,
        "plain_open_ms": round(med["plain"]["open"] * 1e3, 2),
        "encrypted_open_ms": round(med["encrypted"]["open"] * 1e3, 2),
        "encrypted_first_open_s": round(first_open, 3),
        "plain_search_p50_ms": round(med["plain"]["search"] * 1e3, 2),
        "encrypted_search_p50_ms": round(med["encrypted"]["search"] * 1e3, 2),
        "plain_ingest_passages_per_s": round(med["plain"]["ingest"], 1),
        "encrypted_ingest_passages_per_s": round(med["encrypted"]["ingest"], 1),
        "plain_turn_ms": round(med["plain"]["turn"] * 1e3, 2),
        "encrypted_turn_ms": round(med["encrypted"]["turn"] * 1e3, 2),
        "plain_build_s": round(build_plain_s, 2),
        "encrypted_build_s": round(build_encrypted_s, 2),
        "plain_store_bytes": sizes["plain"],
        "encrypted_store_bytes": sizes["encrypted"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="a small store, one round")
    parser.add_argument("--messages", type=int, default=None, help="messages in each store (default 20000)")
    parser.add_argument("--rounds", type=int, default=None, help="alternating rounds (default 3)")
    args = parser.parse_args(argv)
    emit(measure(args.quick, messages=args.messages, rounds=args.rounds), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
