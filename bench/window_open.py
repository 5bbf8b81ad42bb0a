"""Opening the window on a large store: process start to a usable window (the conversation's newest
messages shown, Send enabled), with ``--n`` stored messages and as many archival passages (made
with bench.scale's helpers), against the same window on a store of a few messages measured in the
same run, each in a fresh process.

    python -m bench.window_open --n 100000 --json

The window is the real one, offscreen, on a scripted model and bench.scale's 384-d embedder, so
what is timed is the window's own work, not a model's load. After it is usable, a 10 ms timer runs
for ``--watch`` seconds: its worst lateness is how long the window froze meanwhile (the agent
opening, the vector index loading in the background). Graph extraction, login and heartbeats are
off: a store this size has its graph caught up already, and no turn is asked of the model.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import bench_parser
from bench.report import emit

SMALL = 20
CHILD_PREFIX = "window-open"
OPEN_WAIT_MS = 120_000  # a bound, not a figure: the wait ends once the window has opened


def build_store(home: Path, n: int) -> None:
    """A store with one agent, ``n`` messages (the last one a reply, so nothing is owed) and ``n``
    passages; the context window holds the newest few messages."""
    from bench.scale import Corpus, GivenVectors, fill
    from memdesk.app.services import open_services
    from memdesk.core.base.clock import iso
    from memdesk.core.base.paths import Paths
    from memdesk.core.memory.space import EmbeddingSpace

    os.environ["MEMDESK_HOME"] = str(home)
    services = open_services(Paths.from_environment().ensure(), embedder=GivenVectors())
    try:
        for name, value in (
            ("login_after_minutes", 0),
            ("heartbeat_minutes", 0),
            ("graph_extraction", False),
            ("graph_model_facts", False),
            ("consolidation", "off"),
        ):
            services.settings_store.set(name, value)
        agent = services.create_agent("Companion")
        services.settings_store.set("last_agent", agent.name)
        db = services.db
        first = int(db.scalar("SELECT COALESCE(MAX(id), 0) FROM messages")) + 1
        assert first == 1, "bench.scale's fill numbers rows from 1"
        EmbeddingSpace(db, GivenVectors()).ensure()
        fill(db, agent.id, Corpus(7, 64), n, messages=True)
        last = db.scalar("SELECT MAX(created_at) FROM messages WHERE agent_id = ?", (agent.id,))
        reply = json.dumps({"function": "send_message", "params": {"inner_thoughts": "", "message": "Noted."}})
        with db.transaction():
            db.execute(
                "INSERT INTO messages(agent_id, created_at, role, kind, content, search_text, function_name, step_id)"
                " VALUES (?, ?, 'assistant', 'assistant_call', ?, 'Noted.', 'send_message', NULL)",
                (agent.id, last or iso(services.clock.now()), reply),
            )
            newest = int(db.scalar("SELECT MAX(id) FROM messages WHERE agent_id = ?", (agent.id,)))
            db.execute("UPDATE agents SET context_start_id = ? WHERE id = ?", (max(1, newest - 20), agent.id))
    finally:
        services.close()


def _child(home: str, watch_s: float) -> int:
    """One window in this process: prints its figures as one JSON line."""
    started = time.perf_counter()
    os.environ["MEMDESK_HOME"] = home
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QElapsedTimer, QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from bench.scale import GivenVectors
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import Paths
    from memdesk.core.runtime.scripted import ScriptedRuntime
    from memdesk.ui.window.main_window import MainWindow

    app = QApplication([sys.argv[0]])
    imported = time.perf_counter() - started
    embedder = GivenVectors()
    paths = Paths.from_environment()
    services = open_services(paths, embedder=embedder)
    runtime = ScriptedRuntime(context_window=32768)
    window = MainWindow(
        services,
        open_worker_services=lambda: open_services(paths, embedder=embedder),
        make_runtime=lambda _settings: runtime,
        warm_embedder=False,
    )
    agent_opened: list[float] = []
    window.worker.agent_opened.connect(lambda _id: agent_opened.append(time.perf_counter() - started))
    window.show()
    opening = QEventLoop()  # the agent and its page are read off the GUI thread, then shown
    window.opened.connect(opening.quit)
    QTimer.singleShot(OPEN_WAIT_MS, opening.quit)  # never opened: not usable, below
    window.start()
    opening.exec()
    app.processEvents()
    usable = time.perf_counter() - started
    usable_ok = window.chat.send_button.isEnabled() and "Noted." in window.chat.transcript.toPlainText()
    worst = [0.0]
    clock = QElapsedTimer()
    clock.start()
    tick = QTimer()
    tick.setInterval(10)

    def on_tick() -> None:
        worst[0] = max(worst[0], clock.restart() - 10)

    tick.timeout.connect(on_tick)
    tick.start()
    QTimer.singleShot(int(watch_s * 1000), app.quit)
    app.exec()
    tick.stop()
    figures = {
        "import_s": round(imported, 3),
        "open_to_usable_s": round(usable, 3),
        "usable": usable_ok,
        "transcript_entries": len(window.chat.transcript.entries),
        "agent_opened_s": round(agent_opened[0], 3) if agent_opened else None,
        "event_loop_worst_stall_ms": round(worst[0], 1),
    }
    window.close()
    services.close()
    print(f"{CHILD_PREFIX} {json.dumps(figures)}", flush=True)
    return 0


def _measure(home: Path, watch_s: float) -> dict:
    env = {**os.environ, "MEMDESK_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    result = subprocess.run(
        [sys.executable, "-m", "bench.window_open", "--child", str(home), "--watch", str(watch_s)],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    for line in result.stdout.splitlines():
        if line.startswith(CHILD_PREFIX):
            return json.loads(line[len(CHILD_PREFIX) :])
    raise RuntimeError(f"the window did not report (exit {result.returncode}): {result.stderr[-2000:]}")


def run(n: int, watch_s: float = 5.0) -> dict:
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        small, large = Path(tmp) / "small", Path(tmp) / "large"
        build_store(small, SMALL)
        build_store(large, n)
        baseline = _measure(small, watch_s)
        measured = _measure(large, watch_s)
    return {
        "n_messages": n,
        "n_passages": n,
        "open_to_usable_s": measured["open_to_usable_s"],
        "open_to_usable_small_store_s": baseline["open_to_usable_s"],
        "open_to_usable_vs_small_store": round(
            measured["open_to_usable_s"] / max(baseline["open_to_usable_s"], 1e-6), 3
        ),
        "usable": measured["usable"],
        "transcript_entries_loaded": measured["transcript_entries"],
        "agent_opened_s": measured["agent_opened_s"],
        "agent_opened_small_store_s": baseline["agent_opened_s"],
        "event_loop_worst_stall_ms": measured["event_loop_worst_stall_ms"],
        "event_loop_worst_stall_small_store_ms": baseline["event_loop_worst_stall_ms"],
        "import_s": measured["import_s"],
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--n", type=int, default=100_000, help="stored messages (and passages)")
    parser.add_argument(
        "--watch", type=float, default=5.0, help="seconds to watch the event loop after the window is usable"
    )
    parser.add_argument("--quick", action="store_true", help="2,000 messages, 1 s watch")
    parser.add_argument("--child", metavar="HOME", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.child, args.watch)
    report = run(2000 if args.quick else args.n, 1.0 if args.quick else args.watch)
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
