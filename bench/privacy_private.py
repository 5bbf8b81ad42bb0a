"""How long a private chat takes to start: the whole store copied into memory (SQLite's online
backup API, what ``open_private_services`` does), against reading the same file's bytes in the
same run (the floor of any copy).

    python -m bench.privacy_private --json [--sizes 50,500] [--repeats 3] [--quick]

Each store is a temporary MemDesk store filled with conversation messages (their full-text index
included, by the schema's own triggers) until the file reaches the size, then checkpointed. Every
figure is the median of ``--repeats`` runs; ``*_ratio`` is copy over read.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.common import bench_parser
from bench.report import emit

WORDS = (
    "the a trip lisbon sister piano garden morning coffee river mountain book friend dinner music work "
    "yesterday tomorrow holiday camping museum painting doctor school project guitar"
).split()


def build_store(path: Path, megabytes: float) -> None:
    from memdesk.core.storage import open_database

    db = open_database(path)
    try:
        db.execute(
            "INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2024-01-01T00:00:00+00:00', 'x')"
        )
        rng = random.Random(1)
        while path.stat().st_size < megabytes * 1_000_000:
            rows = []
            for _ in range(1000):
                text = " ".join(rng.choice(WORDS) for _ in range(60))
                rows.append((1, "2024-01-01T00:00:00+00:00", "user", "user_message", text, text))
            with db.transaction():
                db.executemany(
                    "INSERT INTO messages(agent_id, created_at, role, kind, content, search_text) VALUES (?,?,?,?,?,?)",
                    rows,
                )
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()


def _median_seconds(action, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure_one(home: Path, megabytes: float, repeats: int) -> dict:
    from memdesk.app.services import open_private_services, open_services
    from memdesk.core.base.paths import Paths
    from memdesk.core.embedding.hashing import HashingEmbedder

    paths = Paths(home).ensure()
    build_store(paths.database, megabytes)
    services = open_services(paths, embedder=HashingEmbedder())
    try:
        copy = _median_seconds(lambda: open_private_services(services).close(), repeats)
        read = _median_seconds(lambda: paths.database.read_bytes(), repeats)
        messages = services.db.scalar("SELECT count(*) FROM messages")
    finally:
        services.close()
    return {
        "bytes": paths.database.stat().st_size,
        "messages": messages,
        "copy_s": round(copy, 4),
        "read_s": round(read, 4),
        "ratio": round(copy / read, 2) if read else None,
    }


def measure(sizes_mb: tuple[float, ...] = (50, 500), repeats: int = 3) -> dict:
    """The figures for each size, keyed ``private_chat_start_<N>MB_*``."""
    result: dict = {}
    for size in sizes_mb:
        with tempfile.TemporaryDirectory() as home:
            one = measure_one(Path(home), size, repeats)
        label = f"private_chat_start_{size:g}MB"
        result.update({f"{label}_{key}": value for key, value in one.items()})
    return result


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--sizes", default="50,500", help="store sizes in MB, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one 5 MB store")
    args = parser.parse_args(argv)
    sizes = (5.0,) if args.quick else tuple(float(s) for s in args.sizes.split(","))
    emit(measure(sizes, args.repeats), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
