"""The window while it imports (issue 31's ``ui_timer_lateness_p99_ms``): the real main window,
offscreen, on a scripted model, imports a synthetic ChatGPT export the way a person does (File >
Import history…: the export read for its preview, then Import), while a 10 ms QTimer ticks in its
event loop; each tick's lateness is how much later than 10 ms after the previous one it came
(bench.privacy_backup measures the window the same way during a snapshot). The same timer ticks
for a few seconds with the window idle first: ``ui_timer_lateness_p99_ms_idle`` is this machine's
floor in the same run.

It runs in a fresh process (``spawn``), so the window's threads and the embedder's are its own.

    python -m bench.history_window --mb 5 --json
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from pathlib import Path

from bench.common import bench_parser, percentile
from bench.lateness import StageTimeout, idle_lateness, timer_lateness
from bench.report import emit

#: Seconds the timer ticks with the window idle, before the import.
IDLE_SECONDS = 3.0
GOAL_LATENESS_MS = 30.0
#: The longest any stage may take (a stuck import must end the run, not hang it): an hour.
STAGE_LIMIT_S = 3600.0


def _figures(lateness: list[float]) -> dict:
    return {
        "p99_ms": round(percentile(lateness, 0.99, empty=0.0), 2),
        "max_ms": round(max(lateness, default=0.0), 2),
        "ticks": len(lateness),
    }


def _window_child(export: str, home: str, embedder_name: str, answer, limit_s: float = STAGE_LIMIT_S) -> None:
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    os.environ["MEMDESK_HOME"] = home
    from PySide6.QtWidgets import QApplication

    from bench.history import _embedder
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import Paths
    from memdesk.core.runtime.scripted import ScriptedRuntime
    from memdesk.ui.dialogs.history_import import PREVIEW
    from memdesk.ui.window.main_window import MainWindow

    _app = QApplication.instance() or QApplication([])  # kept: the window needs it alive
    embedder = _embedder(embedder_name)
    embedder.embed(["warm up"])  # loaded before the window, as the app's warm-up would have
    paths = Paths.from_environment().ensure()
    services = open_services(paths, embedder=embedder)
    # No turn, heartbeat, consolidation or graph work of its own: what the timer feels is the import.
    for name, value in (
        ("login_after_minutes", 0),
        ("heartbeat_minutes", 0),
        ("graph_extraction", False),
        ("graph_model_facts", False),
        ("consolidation", "off"),
    ):
        services.settings_store.set(name, value)
    agent = services.create_agent("bench")
    services.settings_store.set("last_agent", agent.name)
    window = MainWindow(
        services,
        open_worker_services=lambda: open_services(paths, embedder=embedder),
        make_runtime=lambda _settings: ScriptedRuntime(context_window=32768),
        warm_embedder=False,
    )
    finished: list[float] = []
    window.worker.import_finished.connect(lambda *_args: finished.append(time.perf_counter()))
    window.show()
    window.start()
    timer_lateness(
        lambda: window.state.agent_id is not None and window.state.model_ready and not window.reads.busy, limit_s
    )
    idle = idle_lateness(IDLE_SECONDS)
    started = time.perf_counter()
    dialog = window.history_imports.offer(Path(export))
    assert dialog is not None
    reading = timer_lateness(lambda: dialog.stage == PREVIEW or not dialog.isVisible(), limit_s)
    previewed = time.perf_counter()
    dialog.import_button.click()
    importing = timer_lateness(lambda: bool(finished), limit_s)
    count = services.memory.recall.imported_count(agent.id)
    window.close()
    services.close()
    answer.put(
        {
            "idle": _figures(idle),
            "preview": _figures(reading),
            "import": _figures(importing),
            "preview_seconds": round(previewed - started, 2),
            "import_seconds": round(finished[0] - previewed, 2),
            "messages": count,
        }
    )


def window_lateness(export: Path, embedder_name: str, limit_s: float = STAGE_LIMIT_S) -> dict:
    """The window's timer lateness while it imports ``export`` (in a fresh process); a stage that
    takes over ``limit_s`` seconds ends the run with StageTimeout."""
    with tempfile.TemporaryDirectory(prefix="memdesk-bench-history-window-") as home:
        return run_in_child(_window_child, (str(export), home, embedder_name), 4 * limit_s + 120, limit_s)


def run_in_child(target, args: tuple, wait_s: float, *more) -> dict:
    """``target(*args, answer, *more)`` in a fresh (spawned) process: what it put on ``answer``.
    An error as soon as the child ended without answering (a crash), or after ``wait_s``; the
    child is never left running, whatever went wrong."""
    child, answer = start_child(target, args, *more)
    return answer_of(child, answer, wait_s)


def start_child(target, args: tuple, *more):
    """``target(*args, answer, *more)`` started in a fresh (spawned) process: (child, answer)."""
    context = multiprocessing.get_context("spawn")
    answer = context.Queue()
    child = context.Process(target=target, args=(*args, answer, *more))
    child.start()
    return child, answer


def answer_of(child, answer, wait_s: float) -> dict:
    """What a child of ``start_child`` answers (see run_in_child); the child is ended after it."""
    import queue

    try:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                return answer.get(timeout=1.0)
            except queue.Empty:
                if not child.is_alive():
                    try:
                        return answer.get(timeout=1.0)  # put just before it ended
                    except queue.Empty:
                        raise RuntimeError(
                            f"the benchmark's child ended without figures (exit {child.exitcode})"
                        ) from None
        raise StageTimeout(f"the benchmark's child gave no figures within {wait_s:.0f} s")
    finally:
        child.join(timeout=60)
        if child.is_alive():
            child.kill()
            child.join(timeout=10)


def run(megabytes: float = 5.0, embedder_name: str = "default") -> dict:
    from bench.history import synthetic_export

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="memdesk-bench-history-window-") as folder:
        export = Path(folder) / "chatgpt-export.zip"
        conversations, _messages = synthetic_export(export, megabytes)
        figures = window_lateness(export, embedder_name)
    return {
        "export_mb": megabytes,
        "conversations": conversations,
        "messages": figures["messages"],
        "ui_timer_lateness_p99_ms": figures["import"]["p99_ms"],
        "ui_timer_lateness_max_ms": figures["import"]["max_ms"],
        "ui_timer_lateness_p99_ms_idle": figures["idle"]["p99_ms"],
        "ui_timer_lateness_p99_ms_preview": figures["preview"]["p99_ms"],
        "ui_ticks": figures["import"]["ticks"],
        "window_import_seconds": figures["import_seconds"],
        "window_preview_seconds": figures["preview_seconds"],
        "goal_ms": GOAL_LATENESS_MS,
        "load": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--mb", type=float, default=5.0, help="size of the synthetic conversations.json")
    parser.add_argument("--embedder", choices=("default", "hashing"), default="default")
    args = parser.parse_args()
    emit(run(args.mb, args.embedder), args.json)


if __name__ == "__main__":
    main()
