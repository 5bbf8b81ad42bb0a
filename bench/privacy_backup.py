"""Backups (issue 19 §2): how long a snapshot of a large store takes, and how late the window's
timer runs meanwhile.

    python -m bench.privacy_backup --json            # a ~1 GB store
    python -m bench.privacy_backup --quick --json    # ~50 MB
    python -m bench.privacy_backup --mb 200 --sweep --json   # several step sizes on one store

A store with the real schema is filled with synthetic conversation messages (bulk inserts, FTS
index included). The snapshot runs on a worker thread, as the window runs it (the job pool), while
the main thread runs an offscreen Qt event loop whose QTimer ticks every 10 ms; the timer's
lateness is how much later than 10 ms after the previous tick each tick came. The same loop runs
for a while with nothing else going on first: ``timer_lateness_p99_ms_idle`` is this machine's
own floor, in the same run.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import threading
import time
from pathlib import Path

from bench.common import bench_parser, percentile, sentence
from bench.lateness import idle_lateness, timer_lateness
from memdesk.core.base.clock import SystemClock
from memdesk.core.base.settings_table import Settings
from memdesk.core.storage import open_database
from memdesk.core.storage.backup import PAGES_PER_STEP, PAUSE_BETWEEN_STEPS_S, Backups

GOAL_LATENESS_MS = 30.0
#: The longest a snapshot may take (a stuck one ends the run, not hangs it): an hour.
STAGE_LIMIT_S = 3600.0


def build_store(path: Path, megabytes: float, seed: int = 5) -> int:
    """A store of about ``megabytes`` of synthetic messages; returns the number of messages."""
    rng = random.Random(seed)
    db = open_database(path)
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('bench', '2026-01-01T00:00:00+00:00', '')")
    agent_id = db.scalar("SELECT id FROM agents WHERE name = 'bench'")
    # A pool of sentences reused in new orders: generating fresh text per message would dominate.
    sentences = [sentence(rng) for _ in range(4000)]
    target = int(megabytes * 1_000_000)
    count = 0
    while path.stat().st_size + _wal_size(path) < target:
        rows = []
        for _ in range(5000):
            text = " ".join(rng.choice(sentences) for _ in range(12))
            rows.append(
                (agent_id, f"2026-01-01T00:{count % 60:02d}:00+00:00", "user", "user_message", text, text[:300])
            )
            count += 1
        with db.transaction():
            db.executemany(
                "INSERT INTO messages(agent_id, created_at, role, kind, content, search_text)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return count


def _wal_size(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


def _one_backup(backups: Backups) -> dict:
    done = threading.Event()
    outcome: dict = {}

    def work() -> None:
        started = time.perf_counter()
        try:
            snapshot = backups.create("bench")
            outcome["seconds"] = time.perf_counter() - started
            outcome["size"] = snapshot.size
        except BaseException as error:  # noqa: BLE001 - reported in the JSON
            outcome["error"] = repr(error)
        finally:
            done.set()

    worker = threading.Thread(target=work, name="snapshot")
    worker.start()
    lateness = timer_lateness(done.is_set, STAGE_LIMIT_S)
    worker.join()
    if "error" in outcome:
        raise RuntimeError(outcome["error"])
    return {"seconds": outcome["seconds"], "size": outcome["size"], "lateness": lateness}


def measure(
    quick: bool = False, *, megabytes: float | None = None, sweep: bool = False, folder: Path | None = None
) -> dict:
    from PySide6.QtWidgets import QApplication

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    _app = QApplication.instance() or QApplication([])  # kept: the timer ticks in its event loop
    megabytes = megabytes or (50.0 if quick else 1000.0)
    with tempfile.TemporaryDirectory(prefix="memdesk-bench-backup-", dir=folder) as temporary:
        root = Path(temporary)
        store = root / "store.sqlite3"
        built = time.perf_counter()
        messages = build_store(store, megabytes)
        build_seconds = time.perf_counter() - built
        size = store.stat().st_size
        idle = idle_lateness(2.0)
        configs = [(PAGES_PER_STEP, PAUSE_BETWEEN_STEPS_S)]
        if sweep:
            configs = [(-1, 0.0), (4096, 0.0), (1024, 0.0), (256, 0.0), (256, 0.002), (64, 0.002)] + configs
        runs = []
        for pages, pause in configs:
            backups = Backups(
                store,
                root / "backups",
                SystemClock(),
                keep_daily=Settings().backup_keep_daily,
                keep_weekly=Settings().backup_keep_weekly,
                pages_per_step=pages,
                pause_s=pause,
            )
            result = _one_backup(backups)
            for snapshot in backups.list():
                backups.remove(snapshot.id)
            runs.append(
                {
                    "pages_per_step": pages,
                    "pause_ms": pause * 1000,
                    "backup_seconds": round(result["seconds"], 3),
                    "timer_lateness_p99_ms": round(percentile(result["lateness"], 0.99, empty=0.0), 2),
                    "timer_lateness_max_ms": round(max(result["lateness"], default=0.0), 2),
                    "ticks": len(result["lateness"]),
                }
            )
    chosen = runs[-1]
    report = {
        "store_bytes": size,
        "messages": messages,
        "build_seconds": round(build_seconds, 1),
        "backup_seconds": chosen["backup_seconds"],
        # Scaled linearly to 1 GB from the size measured (the copy and the check read every page once).
        "backup_seconds_1gb": round(chosen["backup_seconds"] * 1e9 / size, 2),
        "timer_lateness_p99_ms": chosen["timer_lateness_p99_ms"],
        "timer_lateness_p99_ms_idle": round(percentile(idle, 0.99, empty=0.0), 2),
        "timer_lateness_goal_ms": GOAL_LATENESS_MS,
        "pages_per_step": chosen["pages_per_step"],
        "pause_ms": chosen["pause_ms"],
        "cpu_count": os.cpu_count(),
    }
    if sweep:
        report["sweep"] = runs
    return report


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="a ~50 MB store")
    parser.add_argument("--mb", type=float, help="store size in megabytes (default 1000; --quick 50)")
    parser.add_argument("--sweep", action="store_true", help="also try other step sizes and pauses on the same store")
    args = parser.parse_args()
    report = measure(args.quick, megabytes=args.mb, sweep=args.sweep)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
